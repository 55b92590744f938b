"""Provider names by uuid, for answers that name a few providers."""

import sqlalchemy as sa

from placement.storage.tables import RP


def by_uuid(conn, uuids):
    """{uuid: name} of the providers ``uuids`` that exist."""
    uuids = sorted(set(uuids))
    if not uuids:
        return {}
    return dict(conn.execute(
        sa.select(RP.c.uuid, RP.c.name).where(RP.c.uuid.in_(uuids))).all())
