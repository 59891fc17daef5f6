"""Review: what people read and decide with, beyond ``service.proposals``' list, show and decide.

``session`` is ``dreamd review``'s one-at-a-time walk with its undo, ``web`` and
``web_access`` the local pages of ``dreamd serve`` and who may use them, ``decisions`` what
those pages decide, apply and take back, ``pages`` the HTML both the pages and ``export
--html`` draw (``seen``: the bytes a proposal was made from; ``agent_reads``: what the agent
reads after it), ``export`` patch files and a review branch, and ``audit`` what happened to
a store and whether it is as dreamd left it.
"""

from daemon.service.face import face

__getattr__, __dir__ = face(__name__, {
    "Review": "session", "base_notes": "session",
    "serve": "web", "build": "web",
    "Access": "web_access", "answers_to": "web_access",
    "write_html_report": "pages",
    "export_report": "export", "export_branch": "export", "export_patches": "export", "chosen": "export",
    "history": "audit", "event_log": "audit", "verify": "audit",
})  # fmt: skip
