"""What an allocation-candidates request asks for, as plain values."""

import dataclasses


@dataclasses.dataclass
class RequestGroup:
    """One request group.

    The unsuffixed group (``suffix == ''``) may be satisfied by several
    providers of one tree (and sharing providers), one provider per
    resource class; a granular group (any other suffix) by exactly one
    provider.  ``required_traits`` and ``member_of`` are lists of sets,
    each set satisfied by any one of its members.
    """
    suffix: str
    resources: dict = dataclasses.field(default_factory=dict)
    required_traits: list = dataclasses.field(default_factory=list)
    forbidden_traits: set = dataclasses.field(default_factory=set)
    member_of: list = dataclasses.field(default_factory=list)
    forbidden_aggregates: set = dataclasses.field(default_factory=set)
    in_tree: str | None = None

    @property
    def granular(self):
        return self.suffix != ''


@dataclasses.dataclass
class CandidateRequest:
    """Request groups (in the order the query named them) and the
    parameters that apply to the request as a whole."""
    groups: list
    limit: int | None = None
    group_policy: str | None = None
    root_required: set = dataclasses.field(default_factory=set)
    root_forbidden: set = dataclasses.field(default_factory=set)
    same_subtrees: list = dataclasses.field(default_factory=list)
    # Before 1.29 clients cannot tell providers of one tree apart: an
    # answer may then use at most one provider per tree.
    nested_aware: bool = True

    @property
    def isolate(self):
        return self.group_policy == 'isolate'


@dataclasses.dataclass
class Settings:
    """The [placement] options that shape the answer."""
    max_candidates: int = -1
    randomize: bool = False
    breadth_first: bool = False
