"""Model backends: the only code that touches model weights."""
