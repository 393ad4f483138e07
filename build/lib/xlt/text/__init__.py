"""The text room: language tags (``languages``: one normaliser under every reader and config) and the
words of a sentence (``words``: one segmentation under augmentation, translation and pretraining)."""
