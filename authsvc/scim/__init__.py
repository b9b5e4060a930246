"""SCIM 2.0 provisioning (RFC 7643, RFC 7644): identity providers create, update and remove a domain's users and groups.

``views`` holds the thin HTTP layer under ``/scim/v2``; ``users``, ``groups`` and
``deprovisioning`` the service functions; ``queries`` turns SCIM filters into SQL;
``discovery`` the three discovery endpoints; ``protocol`` what every answer shares.
The resources and the PATCH, filter and path grammar are scim2-models'.
"""
