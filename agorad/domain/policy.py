"""Per-mode capabilities (agora-rpc(7) "Who may call"), enforced on every call.

The local operator (a same-uid connection that did not say `hub.hello`) may
do everything. An agent may do what its liveness mode allows; a refusal is a
`forbidden` error that names the rule.
"""

from __future__ import annotations

from agorad.surface.errors import Forbidden
from agorad.surface.vocab import HUB_SENDER, LIVENESS_MODES, OPERATOR_NAME, PROFILE_PREFIX


# capability -> (modes allowed, the rule quoted in a refusal)
CAPABILITIES = {
    "kb.read": (LIVENESS_MODES, "every agent may read the KB"),
    "kb.write": (LIVENESS_MODES, "every agent may write the KB; entries carry their author"),
    "heartbeat": (LIVENESS_MODES, "every agent may heartbeat for itself"),
    "registry.admin": (
        (),
        "registry administration (register, change, rename or delete an agent) is reserved to the "
        "local operator; no liveness mode may do it",
    ),
    "steward.report": (
        (),
        "the steward's report on stale claims, seats and debts is for the local operator's judgment; "
        "no liveness mode may read it",
    ),
    "hub.pause": ((), "only the local operator pauses or resumes the hub; no liveness mode may do it"),
    "charter.write": (
        (),
        "charters (the hub's and every channel's) are set only by the local operator: they are the rules "
        "the seats they bind read first, so no seat may write them for its peers",
    ),
}


class Actor:
    """Who is calling: the operator (agent None) or an authenticated agent."""

    __slots__ = ("agent_pk", "agent_id", "mode")

    def __init__(self, agent_pk: int | None = None, agent_id: str | None = None, mode: str | None = None):
        self.agent_pk, self.agent_id, self.mode = agent_pk, agent_id, mode

    @property
    def is_operator(self) -> bool:
        return self.agent_pk is None

    @property
    def name(self) -> str:
        return self.agent_id or OPERATOR_NAME


def require(actor: Actor, capability: str) -> None:
    """Raise Forbidden unless `actor` holds `capability`."""
    if actor.is_operator:
        return
    modes, rule = CAPABILITIES[capability]
    if actor.mode not in modes:
        raise Forbidden(f"{actor.agent_id} ({actor.mode}) may not do this: {rule}", rule=capability)


def require_kb_write(actor: Actor, key: str) -> None:
    """KB writes, plus: a `profile/<id>` entry is an identity, writable only by <id> or the operator; and
    none is written for the hub's own sender id, which no agent can hold (`agora agents` listed it)."""
    require(actor, "kb.write")
    if key == PROFILE_PREFIX + HUB_SENDER:
        raise Forbidden(f"{key} would be the profile of {HUB_SENDER!r}, the hub's own sender, which no agent can be",
                        rule="kb.profile-reserved")
    if actor.is_operator or not key.startswith(PROFILE_PREFIX):
        return
    owner = key[len(PROFILE_PREFIX):]
    if owner != actor.agent_id:
        raise Forbidden(
            f"{actor.agent_id} may not write {key}: a profile entry is written only by its own agent "
            "or the local operator",
            rule="kb.profile-owner",
        )
