"""``trim_history``'s cut points found by searching the roles (issue 33, item 10).

``trim_history`` no longer walks the messages in Python: it reads their roles once and
finds both cut points (the sliding window's and the stepped one) by searching that list
for system messages. The search must give what a plain pass over the counts gives.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from golem_core import Message, trim_history
from golem_core._messages import Role
from golem_core.history._processors import _after_counted

ROLES = st.lists(st.sampled_from([Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL]))


def reference(roles: list[Role], target: int) -> int:
    """The first index whose prefix holds ``target`` non-system messages, by a plain pass."""
    reached = 0
    for index, role in enumerate(roles):
        if reached >= target:
            return index
        reached += role is not Role.SYSTEM
    return len(roles)


@given(ROLES, st.integers(0, 40))
def test_the_search_finds_the_point_a_plain_pass_finds(roles: list[Role], target: int) -> None:
    assert _after_counted(roles, target) == reference(roles, target)


def test_system_messages_stay_free_at_both_cut_points() -> None:
    system, user = Message.system("s"), Message.user
    history = (system, user("1"), system, user("2"), system, user("3"), user("4"), system)
    # the window keeps the newest 2 non-system messages (a system message cannot open)
    assert trim_history(2, low_water=2)(history).unwrap() == history[5:]
    # stepped: 4 counted, limit 3, steps of 2 or 1: cut after 2 or 1 counted messages
    assert trim_history(3, low_water=1)(history).unwrap() == history[5:]
    assert trim_history(3, low_water=2)(history).unwrap() == history[3:]
    assert trim_history(4)(history).unwrap() is history
