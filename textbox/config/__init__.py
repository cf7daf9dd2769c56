"""Configuration: typed schema, layered loading, validation."""
from textbox.config.errors import ConfigError, DataError, RunInterrupted, TextBoxError, TextBoxUserError
from textbox.config.loader import Config, load_config

__all__ = ["Config", "ConfigError", "DataError", "RunInterrupted", "TextBoxError", "TextBoxUserError", "load_config"]
