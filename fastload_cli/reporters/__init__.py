"""Renderers: each a pure converter from a ``Report``; ``cli.py`` does the writing."""
