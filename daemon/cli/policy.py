"""Policies: ``policy check FILE`` and ``policy explain ID --policy FILE``."""

from __future__ import annotations

import click

from daemon.cli.review import PROPOSAL_ID


@click.group("policy")
def policy_group() -> None:
    """Check a policy file, or explain how a policy would decide a proposal."""


@policy_group.command("check")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False))
@click.pass_context
def check_command(ctx: click.Context, path: str) -> None:
    """Validate a policy file; print its identity, or every problem with its line (exit 2)."""
    from daemon.policies.load import PolicyError, load_policy

    try:
        policy = load_policy(path)
    except PolicyError as exc:
        for problem in exc.problems:
            click.echo(f"error[policy]: {problem}", err=True)
        ctx.exit(2)
        return
    click.echo(f"ok: policy {policy.name}@{policy.digest}, {len(policy.rules)} rules")


@policy_group.command("explain")
@click.argument("proposal_id", type=PROPOSAL_ID)
@click.option("--policy", "policy_path", required=True, metavar="FILE", help="The policy file to judge with.")
@click.pass_obj
def explain_command(settings, proposal_id: int, policy_path: str) -> None:
    """Show which rule of a policy would decide a proposal, and why."""
    from daemon.policies.engine import evaluate, explain_misses
    from daemon.service.deciding import load_facts
    from daemon.policies.load import load_policy

    policy = load_policy(policy_path)
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
