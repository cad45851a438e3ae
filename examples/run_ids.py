"""Run and conversation identity across chained and forked runs (offline, no key).

python examples/run_ids.py
"""

from __future__ import annotations

from golem_core import ModelRequest
from golem_shell import Agent, FunctionModel, new_id


def reply(request: ModelRequest) -> str:
    return f"reply to {request.messages[-1].text!r}"


def main() -> None:
    agent = Agent(FunctionModel(reply), instructions="Answer briefly.")

    first = agent.run_sync("hi")
    print(f"first      run={first.run_id} conversation={first.conversation_id}")

    continued = agent.run_with_history_sync(first.messages, "and then?")
    print(f"continued  run={continued.run_id} conversation={continued.conversation_id}")

    fork = agent.run_with_history_sync(first.messages, "fork this", conversation_id=new_id())
    print(f"fork       run={fork.run_id} conversation={fork.conversation_id}")

    print()
    print("continued shares the conversation:", continued.conversation_id == first.conversation_id)
    print("continued has a fresh run id:     ", continued.run_id != first.run_id)
    print("the fork is a new conversation:   ", fork.conversation_id != first.conversation_id)
    stamped = all(m.run_id == continued.run_id for m in continued.new_messages)
    print("every new message is stamped:     ", stamped)


if __name__ == "__main__":
    main()
