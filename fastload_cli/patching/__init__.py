"""Advice written as a change to the script's code, for ``fastload fix``: which recommendations are
a change at the call that builds the training loader (``edits``), the change made in the source
with its comments and layout kept (``rewrite``), the unified diff (``diff``), and the alternated
plain runs judged (``proof``). Pure: ``runner/plain.py`` runs the plain runs, ``cli/fixing.py``
puts it together."""
