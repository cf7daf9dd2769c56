"""Configuration: typed schema, layered loading, validation."""
from textbox.config.errors import ConfigError, DataError, TextBoxUserError
from textbox.config.loader import Config, load_config

__all__ = ["Config", "ConfigError", "DataError", "TextBoxUserError", "load_config"]
