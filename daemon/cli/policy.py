"""Policies: ``policy check FILE|NAME`` and ``policy explain ID --policy FILE|NAME``.

A NAME is a policy shipped with dreamd (default, strict, trusting), found as a store's
``policy = "NAME"`` finds it: the name first, then a file of that name.
"""

from __future__ import annotations

from pathlib import Path

import click

from daemon.cli.review import PROPOSAL_ID


def _policy_file(given: str) -> Path:
    from daemon.policies.load import policy_file

    return policy_file(given, Path.cwd())


@click.group("policy")
def policy_group() -> None:
    """Check a policy file, or explain how a policy would decide a proposal."""


@policy_group.command("check")
@click.argument("path", metavar="FILE|NAME", type=click.Path(dir_okay=False))
@click.pass_context
def check_command(ctx: click.Context, path: str) -> None:
    """Validate a policy file or shipped policy; print its identity, or every problem with its line (exit 2)."""
    from daemon.policies.load import PolicyError, load_policy

    try:
        policy = load_policy(_policy_file(path))
    except PolicyError as exc:
        for problem in exc.problems:
            click.echo(f"error[policy]: {problem}", err=True)
        ctx.exit(2)
        return
    click.echo(f"ok: policy {policy.name}@{policy.digest}, {len(policy.rules)} rules")


@policy_group.command("explain")
@click.argument("proposal_id", type=PROPOSAL_ID)
@click.option("--policy", "policy_path", required=True, metavar="FILE|NAME", help="The policy to judge with: a file, or default, strict, trusting.")
@click.pass_obj
def explain_command(settings, proposal_id: int, policy_path: str) -> None:
    """Show which rule of a policy would decide a proposal, and why."""
    from daemon.policies.engine import evaluate, explain_misses
    from daemon.service.passes import load_facts
    from daemon.policies.load import load_policy

    policy = load_policy(_policy_file(policy_path))
    view, facts = load_facts(settings.app(read_only=True), proposal_id)
    decision = evaluate(policy, facts)
    click.echo(f"#{proposal_id} {view.kind} [{view.state}] {view.title}")
    click.echo(f"  source {facts.source}, confidence {facts.confidence:.2f}, lossy {str(facts.lossy).lower()}, "
               f"{len(facts.notes)} notes, {len(facts.retire)} retired, {facts.changed_lines} changed lines")  # fmt: skip
    unknown = [n for n in facts.notes if n not in facts.ages_days]
    if unknown:
        click.echo(f"  age unknown (no updated_at/created_at): {', '.join(unknown)}")
    click.echo("  pinned: from frontmatter only (pinned globs are checked at apply); budget counts taken as 0")
    for line in explain_misses(policy, facts):
        click.echo(f"  {line}")
    click.echo(f"{decision.decision} by {decision.actor}: {decision.reason}")


COMMANDS = [policy_group]
