"""TextBox 2.0 compatibility: its key names (names.py), its spellings of our keys' values (values.py), and how
both are applied to a layer of the configuration and rendered for docs/textbox_names.md (translate.py)."""
