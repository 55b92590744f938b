"""``openstack`` CLI commands for this service's extensions, in
osc-placement's command group (the optional extra ``osc``).

Nothing here is imported by the service itself.
"""
