"""agent_env's version, in the one module that the package's face and its servers and clients (which announce it)
all import from below."""

__version__ = "0.1.0"
