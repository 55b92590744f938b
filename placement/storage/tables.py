"""The schema, in SQLAlchemy Core.

Table and column names are upstream Placement's, so that a database written
by upstream can be read by this service (and the reverse); the migrations in
``migrations/`` create exactly this.  Foreign keys with ``ON DELETE CASCADE``
let a provider's dependent rows go with it in one statement.

At the end, the short names the queries call the tables by, and the joins
more than one module makes, each written here once.
"""

import datetime

import sqlalchemy as sa

metadata = sa.MetaData(naming_convention={
    'ix': 'ix_%(table_name)s_%(column_0_N_name)s',
    'uq': 'uniq_%(table_name)s0%(column_0_N_name)s',
    'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s',
    'pk': 'pk_%(table_name)s',
})


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _timestamps():
    return (sa.Column('created_at', sa.DateTime, default=utcnow),
            sa.Column('updated_at', sa.DateTime, onupdate=utcnow))


resource_classes = sa.Table(
    'resource_classes', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
    sa.Column('name', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name'),
)

resource_providers = sa.Table(
    'resource_providers', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.Unicode(200), nullable=True),
    sa.Column('generation', sa.Integer, nullable=False, default=0),
    sa.Column('root_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=True),
    sa.Column('parent_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=True),
    *_timestamps(),
    sa.UniqueConstraint('uuid'),
    sa.UniqueConstraint('name'),
    sa.Index('resource_providers_root_provider_id_idx', 'root_provider_id'),
    sa.Index('resource_providers_parent_provider_id_idx',
             'parent_provider_id'),
)

inventories = sa.Table(
    'inventories', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id', ondelete='CASCADE'),
              nullable=False),
    sa.Column('resource_class_id', sa.Integer,
              sa.ForeignKey('resource_classes.id'), nullable=False),
    sa.Column('total', sa.Integer, nullable=False),
    sa.Column('reserved', sa.Integer, nullable=False),
    sa.Column('min_unit', sa.Integer, nullable=False),
    sa.Column('max_unit', sa.Integer, nullable=False),
    sa.Column('step_size', sa.Integer, nullable=False),
    sa.Column('allocation_ratio', sa.Float, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint(
        'resource_provider_id', 'resource_class_id',
        name='uniq_inventories0resource_provider_resource_class'),
    sa.Index('inventories_resource_class_id_idx', 'resource_class_id'),
)

allocations = sa.Table(
    'allocations', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=False),
    sa.Column('consumer_id', sa.String(36), nullable=False),
    sa.Column('resource_class_id', sa.Integer,
              sa.ForeignKey('resource_classes.id'), nullable=False),
    sa.Column('used', sa.Integer, nullable=False),
    *_timestamps(),
    sa.Index('allocations_resource_provider_class_used_idx',
             'resource_provider_id', 'resource_class_id', 'used'),
    sa.Index('allocations_resource_class_id_idx', 'resource_class_id'),
    sa.Index('allocations_consumer_class_used_idx', 'consumer_id',
             'resource_class_id', 'used'),
)

placement_aggregates = sa.Table(
    'placement_aggregates', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('uuid'),
)

resource_provider_aggregates = sa.Table(
    'resource_provider_aggregates', metadata,
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id', ondelete='CASCADE'),
              primary_key=True),
    sa.Column('aggregate_id', sa.Integer,
              sa.ForeignKey('placement_aggregates.id'), primary_key=True),
    *_timestamps(),
    sa.Index('resource_provider_aggregates_aggregate_id_idx',
             'aggregate_id'),
)

traits = sa.Table(
    'traits', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('name', sa.Unicode(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name'),
)

resource_provider_traits = sa.Table(
    'resource_provider_traits', metadata,
    sa.Column('trait_id', sa.Integer, sa.ForeignKey('traits.id'),
              primary_key=True),
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id', ondelete='CASCADE'),
              primary_key=True),
    *_timestamps(),
    sa.Index('resource_provider_traits_resource_provider_trait_idx',
             'resource_provider_id', 'trait_id'),
)

projects = sa.Table(
    'projects', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('external_id', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('external_id'),
)

users = sa.Table(
    'users', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('external_id', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('external_id'),
)

consumer_types = sa.Table(
    'consumer_types', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('name', sa.Unicode(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name'),
)

consumers = sa.Table(
    'consumers', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('project_id', sa.Integer, sa.ForeignKey('projects.id'),
              nullable=False),
    sa.Column('user_id', sa.Integer, sa.ForeignKey('users.id'),
              nullable=False),
    sa.Column('generation', sa.Integer, nullable=False, default=0,
              server_default='0'),
    sa.Column('consumer_type_id', sa.Integer,
              sa.ForeignKey('consumer_types.id'), nullable=True),
    *_timestamps(),
    sa.UniqueConstraint('uuid'),
    sa.Index('consumers_project_id_uuid_idx', 'project_id', 'uuid'),
    sa.Index('consumers_project_id_user_id_uuid_idx', 'project_id',
             'user_id', 'uuid'),
    sa.Index('consumers_consumer_type_id_idx', 'consumer_type_id'),
)

# Not upstream's: how processes that keep candidate-relevant state in
# memory learn exactly what changed (storage/changes.py).  Each row is a
# shard of the stamp: the stamp of its last change and the stamp below
# which its log has been pruned; the log names the providers each
# (shard, stamp) changed.
change_stamp = sa.Table(
    'placement_change_stamp', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
    sa.Column('stamp', sa.BigInteger, nullable=False),
    sa.Column('pruned_below', sa.BigInteger, nullable=False),
    sa.Column('epoch', sa.String(36), nullable=False),
    # 1 only inside this service's own write transactions on SQLite, never
    # committed so: where a connection cannot otherwise say whose it is,
    # the triggers that log foreign writes (migration 0004) read it.
    # Unused on the other backends.
    sa.Column('own_write', sa.Integer, nullable=False),
    # How writers keep the log (changes.PROTOCOL), the same in every row;
    # a release that changes it raises it in a migration.
    sa.Column('protocol', sa.Integer, nullable=False, server_default='2'),
)

provider_changes = sa.Table(
    'placement_provider_changes', metadata,
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
              primary_key=True),
    sa.Column('stamp', sa.BigInteger, nullable=False),
    sa.Column('provider_id', sa.Integer, nullable=False),
    # The triggers of migration 0004 log foreign writes under shard 1
    # without naming it.
    sa.Column('shard', sa.Integer, nullable=False, server_default='1'),
    sa.Index('placement_provider_changes_shard_stamp_idx', 'shard', 'stamp'),
)

# Not upstream's: the API processes that keep a state from the change log,
# each with the protocol it follows and when it last read the log, so
# that ``placement-status upgrade check`` can name those left behind by a
# migration that raised the protocol (storage/api_processes.py).
api_processes = sa.Table(
    'placement_api_processes', metadata,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('host', sa.String(255), nullable=False),
    sa.Column('pid', sa.Integer, nullable=False),
    sa.Column('protocol', sa.Integer, nullable=False),
    sa.Column('release', sa.String(64), nullable=False),
    sa.Column('started_at', sa.DateTime, nullable=False),
    sa.Column('seen_at', sa.DateTime, nullable=False),
    sa.Index('placement_api_processes_seen_at_idx', 'seen_at'),
)


# -- the names and joins the queries share ---------------------------------

AGG = placement_aggregates
ALLOC = allocations
CONSUMER = consumers
CONSUMER_TYPE = consumer_types
INV = inventories
PROJECT = projects
RC = resource_classes
RP = resource_providers
RP_AGG = resource_provider_aggregates
RP_TRAIT = resource_provider_traits
TRAIT = traits
USER = users



def root_of(providers):
    """The root id of each row of ``providers`` (resource_providers or an
    alias).  Upstream's releases before Stein left it NULL on providers
    made before nested providers existed, all of them roots, and its
    online data migration fills it in: until then it reads as the
    provider itself, which is what that migration writes."""
    return sa.func.coalesce(providers.c.root_provider_id, providers.c.id)


# An allocation names its consumer by uuid, not through a foreign key.
CONSUMER_OF_ALLOC = ALLOC.c.consumer_id == CONSUMER.c.uuid
# Inventory records with their class's name at hand.
INV_WITH_CLASS = INV.join(RC, INV.c.resource_class_id == RC.c.id)
# Providers' aggregate memberships with each aggregate's uuid.
AGGREGATE_MEMBERSHIPS = RP_AGG.join(AGG, AGG.c.id == RP_AGG.c.aggregate_id)
# Allocations with their provider's and their class's rows.
ALLOC_WITH_PROVIDER_AND_CLASS = (
    ALLOC.join(RP, ALLOC.c.resource_provider_id == RP.c.id)
    .join(RC, ALLOC.c.resource_class_id == RC.c.id))


def with_consumer_names(joined):
    """``joined`` (which has the consumers) joined to each consumer's
    project, user and (outer: older consumers have none) type."""
    return (joined.join(PROJECT, CONSUMER.c.project_id == PROJECT.c.id)
            .join(USER, CONSUMER.c.user_id == USER.c.id)
            .outerjoin(CONSUMER_TYPE,
                       CONSUMER.c.consumer_type_id == CONSUMER_TYPE.c.id))
