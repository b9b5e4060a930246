"""The authorisation server: parameters, clients, grants, revocation and introspection, metadata, its views."""
