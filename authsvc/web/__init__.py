"""The HTTP shell every surface shares: pages and forms, logs, metrics, deployment headers, health views."""
