"""The package version, in a module of its own so any layer can name it without importing the
package root (which imports the agent, and so would close an import circle)."""

__version__ = "0.1.0"
