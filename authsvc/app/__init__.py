"""The top of the service: what knows every feature. Error handlers, request rates, blueprint wiring."""
