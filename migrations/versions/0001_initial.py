"""The initial schema: upstream Placement's tables, with foreign keys.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Written out in full (not read from placement.storage.tables) so that this
revision creates the same schema for ever, whatever tables.py becomes: a
later schema change is a new revision.  Names are wrapped in op.f() to mark
them final; on PostgreSQL, SQLAlchemy shortens those over 63 characters.
"""

from alembic import op
import sqlalchemy as sa

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'resource_classes',
        sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_resource_classes')),
        sa.UniqueConstraint('name', name=op.f('uniq_resource_classes0name')),
    )

    op.create_table(
        'resource_providers',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('name', sa.Unicode(length=200), nullable=True),
        sa.Column('generation', sa.Integer(), nullable=False),
        sa.Column('root_provider_id', sa.Integer(), nullable=True),
        sa.Column('parent_provider_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_resource_providers')),
        sa.ForeignKeyConstraint(
            ['root_provider_id'], ['resource_providers.id'],
            name=op.f('fk_resource_providers_root_provider_id_'
                      'resource_providers')),
        sa.ForeignKeyConstraint(
            ['parent_provider_id'], ['resource_providers.id'],
            name=op.f('fk_resource_providers_parent_provider_id_'
                      'resource_providers')),
        sa.UniqueConstraint('uuid', name=op.f('uniq_resource_providers0uuid')),
        sa.UniqueConstraint('name', name=op.f('uniq_resource_providers0name')),
    )
    op.create_index('resource_providers_root_provider_id_idx',
                    'resource_providers', ['root_provider_id'])
    op.create_index('resource_providers_parent_provider_id_idx',
                    'resource_providers', ['parent_provider_id'])

    op.create_table(
        'inventories',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('resource_provider_id', sa.Integer(), nullable=False),
        sa.Column('resource_class_id', sa.Integer(), nullable=False),
        sa.Column('total', sa.Integer(), nullable=False),
        sa.Column('reserved', sa.Integer(), nullable=False),
        sa.Column('min_unit', sa.Integer(), nullable=False),
        sa.Column('max_unit', sa.Integer(), nullable=False),
        sa.Column('step_size', sa.Integer(), nullable=False),
        sa.Column('allocation_ratio', sa.Float(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_inventories')),
        sa.ForeignKeyConstraint(
            ['resource_provider_id'], ['resource_providers.id'],
            name=op.f('fk_inventories_resource_provider_id_'
                      'resource_providers'),
            ondelete='CASCADE'),
        sa.ForeignKeyConstraint(
            ['resource_class_id'], ['resource_classes.id'],
            name=op.f('fk_inventories_resource_class_id_resource_classes')),
        sa.UniqueConstraint(
            'resource_provider_id', 'resource_class_id',
            name=op.f('uniq_inventories0resource_provider_resource_class')),
    )
    op.create_index('inventories_resource_class_id_idx', 'inventories',
                    ['resource_class_id'])

    op.create_table(
        'allocations',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('resource_provider_id', sa.Integer(), nullable=False),
        sa.Column('consumer_id', sa.String(length=36), nullable=False),
        sa.Column('resource_class_id', sa.Integer(), nullable=False),
        sa.Column('used', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_allocations')),
        sa.ForeignKeyConstraint(
            ['resource_provider_id'], ['resource_providers.id'],
            name=op.f('fk_allocations_resource_provider_id_'
                      'resource_providers')),
        sa.ForeignKeyConstraint(
            ['resource_class_id'], ['resource_classes.id'],
            name=op.f('fk_allocations_resource_class_id_resource_classes')),
    )
    op.create_index('allocations_resource_provider_class_used_idx',
                    'allocations',
                    ['resource_provider_id', 'resource_class_id', 'used'])
    op.create_index('allocations_resource_class_id_idx', 'allocations',
                    ['resource_class_id'])
    op.create_index('allocations_consumer_id_idx', 'allocations',
                    ['consumer_id'])

    op.create_table(
        'placement_aggregates',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_placement_aggregates')),
        sa.UniqueConstraint('uuid',
                            name=op.f('uniq_placement_aggregates0uuid')),
    )

    op.create_table(
        'resource_provider_aggregates',
        sa.Column('resource_provider_id', sa.Integer(), nullable=False),
        sa.Column('aggregate_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint(
            'resource_provider_id', 'aggregate_id',
            name=op.f('pk_resource_provider_aggregates')),
        sa.ForeignKeyConstraint(
            ['resource_provider_id'], ['resource_providers.id'],
            name=op.f('fk_resource_provider_aggregates_resource_provider_id_'
                      'resource_providers'),
            ondelete='CASCADE'),
        sa.ForeignKeyConstraint(
            ['aggregate_id'], ['placement_aggregates.id'],
            name=op.f('fk_resource_provider_aggregates_aggregate_id_'
                      'placement_aggregates')),
    )
    op.create_index('resource_provider_aggregates_aggregate_id_idx',
                    'resource_provider_aggregates', ['aggregate_id'])

    op.create_table(
        'traits',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.Unicode(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_traits')),
        sa.UniqueConstraint('name', name=op.f('uniq_traits0name')),
    )

    op.create_table(
        'resource_provider_traits',
        sa.Column('trait_id', sa.Integer(), nullable=False),
        sa.Column('resource_provider_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint(
            'trait_id', 'resource_provider_id',
            name=op.f('pk_resource_provider_traits')),
        sa.ForeignKeyConstraint(
            ['trait_id'], ['traits.id'],
            name=op.f('fk_resource_provider_traits_trait_id_traits')),
        sa.ForeignKeyConstraint(
            ['resource_provider_id'], ['resource_providers.id'],
            name=op.f('fk_resource_provider_traits_resource_provider_id_'
                      'resource_providers'),
            ondelete='CASCADE'),
    )
    op.create_index('resource_provider_traits_resource_provider_trait_idx',
                    'resource_provider_traits',
                    ['resource_provider_id', 'trait_id'])

    op.create_table(
        'projects',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('external_id', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_projects')),
        sa.UniqueConstraint('external_id',
                            name=op.f('uniq_projects0external_id')),
    )

    op.create_table(
        'users',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('external_id', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
        sa.UniqueConstraint('external_id',
                            name=op.f('uniq_users0external_id')),
    )

    op.create_table(
        'consumer_types',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.Unicode(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_consumer_types')),
        sa.UniqueConstraint('name', name=op.f('uniq_consumer_types0name')),
    )

    op.create_table(
        'consumers',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('project_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('generation', sa.Integer(), server_default='0',
                  nullable=False),
        sa.Column('consumer_type_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_consumers')),
        sa.ForeignKeyConstraint(
            ['project_id'], ['projects.id'],
            name=op.f('fk_consumers_project_id_projects')),
        sa.ForeignKeyConstraint(
            ['user_id'], ['users.id'],
            name=op.f('fk_consumers_user_id_users')),
        sa.ForeignKeyConstraint(
            ['consumer_type_id'], ['consumer_types.id'],
            name=op.f('fk_consumers_consumer_type_id_consumer_types')),
        sa.UniqueConstraint('uuid', name=op.f('uniq_consumers0uuid')),
    )
    op.create_index('consumers_project_id_uuid_idx', 'consumers',
                    ['project_id', 'uuid'])
    op.create_index('consumers_project_id_user_id_uuid_idx', 'consumers',
                    ['project_id', 'user_id', 'uuid'])
    op.create_index('consumers_consumer_type_id_idx', 'consumers',
                    ['consumer_type_id'])
