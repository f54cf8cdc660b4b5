"""One analysis: incident prompt → LLM tool loop → validation → a decision written to status.

``pipeline`` runs the use case; ``prompts`` builds the text, ``llm`` talks to the providers,
``tools`` serves the LLM's tool calls, ``validation`` checks the answer, ``scope`` names what the
answer may act on, ``status`` turns the decision into the status the operator writes.
"""
