"""Text: language tags (``languages``), one normaliser under every reader and config."""
