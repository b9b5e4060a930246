"""The console (/auth/admin/): HTML pages over the admin verbs."""
