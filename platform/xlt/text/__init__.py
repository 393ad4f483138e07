"""The text room: language tags now (``languages``: one normaliser under every reader and config);
word segmentation and dictionaries will move here later."""
