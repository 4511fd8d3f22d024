"""Running the user's script: the child (sensor) and the launcher (brain)."""
