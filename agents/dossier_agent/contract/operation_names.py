"""The operations a node may declare on its serving stack, by name: all that crosses the wire about them.

An agent reports the names it declares (registration and claim), a job lists the names it needs
(`required_operations`), and the commands behind each name stay in the node's own configuration
(`dossier_agent.serving_stack`): the server never sends one.
"""

OPERATIONS = ("start", "stop", "restart", "kill_worker", "bad_deploy", "drain")
