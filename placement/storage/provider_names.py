"""Provider names by uuid, for answers that name a few providers."""

import sqlalchemy as sa

from placement.storage import tables

_RP = tables.resource_providers


def by_uuid(conn, uuids):
    """{uuid: name} of the providers ``uuids`` that exist."""
    uuids = sorted(set(uuids))
    if not uuids:
        return {}
    return dict(conn.execute(
        sa.select(_RP.c.uuid, _RP.c.name).where(_RP.c.uuid.in_(uuids))).all())
