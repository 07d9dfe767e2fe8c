"""Teardown matchers: infrastructure-as-code destroy, Kubernetes deletes, cloud CLIs' delete
verbs, and deleting GitHub repositories or calling the GitHub API with DELETE.

Each reads the tool's own grammar rather than looking for a word: ``terraform plan -destroy``
only plans (a look-alike that stays benign) while ``terraform apply -destroy`` tears down;
``kubectl get``/``helm list`` read; a ``--dry-run`` (kubectl, helm, aws ec2) changes nothing.
For gcloud and az the verb is one of the command-group words before the first option
(``gcloud compute instances delete vm``), so a flag value that happens to read ``delete``
does not count. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_loopcontract.checkpoints.model import Command, Hit, ScanContext, single_hit
from pytest_loopcontract.checkpoints.shell.programs import operands, skip_options
from pytest_loopcontract.checkpoints.shell.vocabulary import word_set

__all__ = [
    "CLOUD_CLIS",
    "IAC_TOOLS",
    "KUBE_TOOLS",
    "cloud_delete",
    "gh_delete",
    "infra_destroy",
    "kube_delete",
]

IAC_TOOLS = word_set("terraform tofu terragrunt pulumi cdk cdktf")
KUBE_TOOLS = word_set("kubectl oc helm")
CLOUD_CLIS = word_set("aws gcloud gsutil az")

_TF_VALUE = word_set("-chdir -var -var-file -target")
_PULUMI_VALUE = word_set("-s --stack -C --cwd --config-file")


def _dry(argv: Sequence[str]) -> bool:
    """``--dry-run`` in any of its spellings (``--dry-run=client`` included)."""
    return any(a == "--dry-run" or a.startswith("--dry-run=") for a in argv)


def infra_destroy(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """``terraform|tofu|terragrunt destroy``, ``apply -destroy``, ``pulumi destroy|down|stack
    rm``, ``cdk destroy``: the declared infrastructure is deleted."""
    name = cmd.program
    argv = cmd.argv
    if name in ("terraform", "tofu", "terragrunt"):
        ops = [o for o in operands(argv, _TF_VALUE) if o != "run-all"]
        if ops[:1] == ["destroy"]:
            return single_hit(cmd.text, f"{name} destroy", always=True)
        if ops[:1] == ["apply"] and any(a in ("-destroy", "--destroy") for a in argv):
            return single_hit(cmd.text, f"{name} apply -destroy", always=True)
        if ops[:2] == ["workspace", "delete"]:
            return single_hit(cmd.text, f"{name} workspace delete")
        return ()
    if name == "pulumi":
        ops = operands(argv, _PULUMI_VALUE)
        if ops[:1] in (["destroy"], ["down"]) or ops[:2] in (["stack", "rm"], ["stack", "remove"]):
            return single_hit(cmd.text, "pulumi " + " ".join(ops[:2]), always=True)
        return ()
    if name in ("cdk", "cdktf") and operands(argv)[:1] == ["destroy"]:
        return single_hit(cmd.text, f"{name} destroy", always=True)
    return ()


_KUBE_VALUE = word_set(
    "-n --namespace --context --kubeconfig --cluster --user -s --server -l --selector -f "
    "--filename -o --output --field-selector --token --as --as-group --timeout"
)
_HELM_DELETE = word_set("uninstall delete del un")


def kube_delete(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """``kubectl|oc delete …`` and ``helm uninstall|delete …`` (``--dry-run`` excepted)."""
    if _dry(cmd.argv):
        return ()
    ops = operands(cmd.argv, _KUBE_VALUE)
    if not ops:
        return ()
    if cmd.program == "helm":
        if ops[0] in _HELM_DELETE:
            return single_hit(cmd.text, f"helm {ops[0]} {' '.join(ops[1:2])}".rstrip())
        return ()
    if ops[0] == "delete":
        what = " ".join(ops[1:3])
        return single_hit(cmd.text, f"{cmd.program} delete {what}".rstrip())
    return ()


_AWS_VALUE = word_set(
    "--profile --region --output --endpoint-url --query --color --ca-bundle "
    "--cli-read-timeout --cli-connect-timeout --cli-binary-format"
)
_AWS_VERBS = ("delete-", "terminate-", "remove-", "deregister-", "destroy-", "purge-")
_GCLOUD_VALUE = word_set(
    "--project --account --configuration --format --verbosity --impersonate-service-account "
    "--billing-project --region --zone"
)
_GROUP_VERBS = word_set("delete rm rb purge remove")


def _aws(cmd: Command) -> tuple[Hit, ...]:
    """``aws SERVICE delete-*|terminate-*…``, ``aws s3 rm|rb``, ``aws s3 sync --delete``."""
    argv = cmd.argv
    i = skip_options(argv, 1, _AWS_VALUE)
    service, op = [*argv[i : i + 2], "", ""][:2]
    if service == "s3" and (op in ("rm", "rb") or (op == "sync" and "--delete" in argv)):
        return single_hit(cmd.text, f"aws s3 {op}{' --delete' if op == 'sync' else ''}")
    if op.startswith(_AWS_VERBS) and "--dry-run" not in argv:
        return single_hit(cmd.text, f"aws {service} {op}")
    return ()


def _group_words(argv: Sequence[str], takes_value: frozenset[str]) -> list[str]:
    """The command-group words of ``gcloud``/``az``/``gsutil``: after the global options, up
    to the first option of the command itself."""
    i = skip_options(argv, 1, takes_value)
    words: list[str] = []
    for a in argv[i:]:
        if a.startswith("-"):
            break
        words.append(a)
    return words


def cloud_delete(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """The aws, gcloud, gsutil and az CLIs' delete, rm and terminate verbs."""
    if cmd.program == "aws":
        return _aws(cmd)
    takes = _GCLOUD_VALUE if cmd.program == "gcloud" else frozenset({"-o", "-h", "-p"})
    words = _group_words(cmd.argv, takes)
    if cmd.program == "gsutil":
        words = words[:1]  # gsutil rm gs://…; later words are URLs
    elif cmd.program == "az":
        words = words[:4]
    verb = next((w for w in words if w in _GROUP_VERBS), None)
    if verb is None:
        return ()
    return single_hit(cmd.text, " ".join([cmd.program, *words[: words.index(verb) + 1]]))


_GH_VALUE = word_set("-R --repo -H --header -f -F --field --raw-field --jq -q -t --template")


def _api_method(argv: Sequence[str]) -> str:
    """The HTTP method of ``gh api``: ``-X M``, ``-XM``, ``--method M``, ``--method=M``."""
    for k, a in enumerate(argv):
        if a in ("-X", "--method") and k + 1 < len(argv):
            return argv[k + 1].upper()
        if a.startswith("--method="):
            return a.partition("=")[2].upper()
        if a.startswith("-X") and len(a) > 2:
            return a[2:].upper()
    return "GET"


def gh_delete(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """``gh repo delete`` and ``gh api -X DELETE …``."""
    ops = operands(cmd.argv, _GH_VALUE | frozenset({"-X", "--method"}))
    if ops[:2] == ["repo", "delete"]:
        return single_hit(cmd.text, "gh repo delete " + " ".join(ops[2:3]), always=True)
    if ops[:1] == ["api"] and _api_method(cmd.argv) == "DELETE":
        return single_hit(cmd.text, "gh api DELETE " + " ".join(ops[1:2]))
    return ()
