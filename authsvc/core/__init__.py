"""Shared by every feature, importing none of them: models, tenancy, security, validation, error values."""
