"""Everything that runs inside the child process: the sensor (``hooks``), one actuator per mode
(``modes``, ``actuators`` and the modes' own modules), the event channel, and the warm starter's
server (``starter``). It imports only itself, ``records`` and ``fixes``: the stdlib and torch,
never the parent's side. ``main.main`` is the entry the bootstrap calls.
"""
