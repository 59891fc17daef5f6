"""The LLM planner: semantic merges, supersessions and expiries, proposed by a model.

    whole       a store that fits one call is sent whole, in one call
    candidates  otherwise, which notes are sent (changed/due anchors and their relations;
                never private or excluded notes); ``topics``: shared rare terms
    packing     groups into calls under the per-call token budget
    redact      secrets out before any text leaves the machine
    injection   notes that try to give the model orders are flagged
    prompts     Jinja2 templates (``prompts/``) -> system + user text, with name and hash
    schema      the versioned JSON reply and its parser
    checks      each model proposal proven against what was sent -> Draft or Refusal
                (``derive``: evidence for a misquote; ``newnote``: a merge into a new note)
    planner     LLMPlanner.plan(): the whole run, budgets, repair turn, call records

Only ``planner`` talks to a ModelClient; nothing here writes a store.
"""

from daemon.planners.llm.checks import Refusal
from daemon.planners.llm.planner import LLMPlanner
from daemon.planners.llm.records import CallRecord, LLMPlan

__all__ = ["CallRecord", "LLMPlan", "LLMPlanner", "Refusal"]
