"""A device stand-in for the hardware-in-the-loop tests (no NPU needed): see standin.py."""
