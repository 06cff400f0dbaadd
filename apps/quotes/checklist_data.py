"""The guide's procurement checklist as data (English, French, Indonesian) and a default commitment policy.

The question texts follow the guide's "procurement checklist" (its four groups); admins may reword them, switch them
off, or change which tiers require them in the Django admin.

The ten "who owns it" lines of the guide's mistake 5 (drivers, CUDA, containers, model server, autoscaling, quotas,
logging, alerts, incidents, spend reporting) are questions too: each is answered with its owner (our team, the
vendor, or a named person). They sit in the software group and in no commitment tier: the comparison's mistake 5
raises a self-operated candidate while any of them names no owner (`names_an_owner`).

Loaded by migration 0002 and again after each migrate or database flush (QuotesConfig.ready), so a database that
predates a question gets it; `load` takes the app registry it is given (a migration's historical one, or the live one)
and is idempotent.
"""

PROCUREMENT_QUESTIONS = [
    # (code, group, English, French, Indonesian)
    ("gpu-model-memory-node", "hardware",
     "Exact GPU model, memory capacity, node form factor and number of GPUs per node.",
     "Modèle exact de GPU, capacité mémoire, forme du nœud et nombre de GPU par nœud.",
     "Model GPU yang tepat, kapasitas memori, faktor bentuk node, dan jumlah GPU per node."),
    ("interconnect", "hardware",
     "Interconnect inside the node and between nodes.",
     "Interconnexion à l’intérieur du nœud et entre les nœuds.",
     "Interkoneksi di dalam node dan antarnode."),
    ("node-shape", "hardware",
     "CPU, RAM, local NVMe, storage bandwidth and network bandwidth.",
     "CPU, RAM, NVMe local, bande passante de stockage et bande passante réseau.",
     "CPU, RAM, NVMe lokal, bandwidth penyimpanan, dan bandwidth jaringan."),
    ("placement", "hardware",
     "Region, zone, placement group, rack or dedicated-cluster assumptions.",
     "Région, zone, groupe de placement, rack ou hypothèses de cluster dédié.",
     "Asumsi mengenai region, zona, placement group, rak, atau klaster khusus."),
    ("failed-hardware-replacement", "hardware",
     "Replacement process for failed GPUs, nodes, storage and network devices.",
     "Processus de remplacement pour les GPU, nœuds, stockage et périphériques réseau défaillants.",
     "Proses penggantian GPU, node, penyimpanan, dan perangkat jaringan yang rusak."),
    ("software-versions", "software",
     "Supported driver, CUDA, cuDNN, NCCL, container runtime and framework versions.",
     "Versions prises en charge du pilote, de CUDA, cuDNN, NCCL, du runtime de conteneurs et des frameworks.",
     "Versi driver, CUDA, cuDNN, NCCL, container runtime, dan framework yang didukung."),
    ("access-model", "software",
     "Access model: Kubernetes, Slurm, managed endpoint or bare metal.",
     "Modèle d’accès : Kubernetes, Slurm, endpoint géré ou bare metal.",
     "Model akses: Kubernetes, Slurm, endpoint terkelola, atau bare-metal."),
    ("serving-stack-support", "software",
     "Support for vLLM, SGLang, TensorRT-LLM, Triton, Ray or media pipelines.",
     "Prise en charge de vLLM, SGLang, TensorRT-LLM, Triton, Ray ou de pipelines média.",
     "Dukungan untuk vLLM, SGLang, TensorRT-LLM, Triton, Ray, atau pipeline media."),
    ("observability", "software",
     "Observability fields for GPU utilisation, memory, queue time, latency, errors and spend.",
     "Champs d’observabilité pour l’utilisation du GPU, la mémoire, le temps d’attente en file, la latence, "
     "les erreurs et les dépenses.",
     "Kolom observabilitas untuk penggunaan GPU, memori, waktu tunggu dalam antrean, latensi, kesalahan, dan biaya."),
    ("upgrade-rollback", "software",
     "Upgrade and rollback process.",
     "Processus de mise à niveau et de retour arrière.",
     "Proses pembaruan dan pengembalian ke versi sebelumnya."),
    ("commercial-model", "commercial",
     "On-demand, spot, reserved, marketplace, dedicated cluster, private cloud or managed endpoint.",
     "À la demande, spot, réservé, marketplace, cluster dédié, cloud privé ou endpoint géré.",
     "On-demand, spot, reserved, marketplace, klaster khusus, private cloud, atau endpoint terkelola."),
    ("commitment-terms", "commercial",
     "Minimum commitment, cancellation rights, overage rates and support tiers.",
     "Engagement minimum, droits d’annulation, tarifs de dépassement et niveaux de support.",
     "Komitmen minimum, hak pembatalan, tarif penggunaan berlebih, dan tingkat dukungan."),
    ("ancillary-costs", "commercial",
     "Storage, egress, snapshot, public IP, load balancer and private networking costs.",
     "Coûts de stockage, d’egress, de snapshots, d’IP publique, de load balancer et de réseau privé.",
     "Biaya penyimpanan, egress, snapshot, IP publik, load balancer, dan jaringan privat."),
    ("usage-export", "commercial",
     "Usage export format and invoice granularity.",
     "Format d’export de l’utilisation et granularité de la facture.",
     "Format ekspor penggunaan dan perincian tagihan."),
    ("idle-capacity-billing", "commercial",
     "Whether idle capacity is billed and how shutdown automation works.",
     "Si la capacité inactive est facturée et comment fonctionne l’automatisation d’arrêt.",
     "Apakah kapasitas yang tidak terpakai dikenai biaya dan bagaimana otomatisasi penghentian bekerja."),
    ("network-boundary", "security",
     "Network boundary, VPC/VNet model, private endpoint support and egress policy.",
     "Frontière réseau, modèle VPC/VNet, prise en charge des endpoints privés et politique d’egress.",
     "Batas jaringan, model VPC/VNet, dukungan private endpoint, dan kebijakan egress."),
    ("iam-audit", "security",
     "IAM, secret handling, audit logs, support access and incident notification.",
     "IAM, gestion des secrets, journaux d’audit, accès du support et notification d’incident.",
     "IAM, penanganan secret, audit logs, akses dukungan, dan notifikasi insiden."),
    ("data-retention", "security",
     "Data storage, checkpoint retention, backup, deletion and legal hold.",
     "Stockage des données, rétention des checkpoints, sauvegarde, suppression et conservation légale.",
     "Penyimpanan data, periode retensi checkpoint, pencadangan, penghapusan, dan legal hold."),
    ("compliance-evidence", "security",
     "Compliance evidence and vendor-review support.",
     "Preuves de conformité et support à la revue fournisseur.",
     "Bukti kepatuhan terhadap persyaratan dan dukungan vendor review."),
    ("budgets-chargeback", "security",
     "Per-team budgets, quotas, tags and chargeback/showback support.",
     "Budgets par équipe, quotas, tags et support de refacturation/showback.",
     "Anggaran per tim, kuota, tag, serta dukungan chargeback/showback."),
]

# (code, the line as the comparison names it, English, French, Indonesian): the guide's mistake 5, one owner per line.
OWNERSHIP_LINES = [
    ("owner-drivers", "drivers",
     "Who owns the GPU drivers (install, patch, upgrade)? Name the owner: our team, the vendor, or a person.",
     "Qui gère les pilotes GPU (installation, correctifs, mises à niveau) ? Nommez le responsable : notre équipe, "
     "le fournisseur ou une personne.",
     "Siapa yang bertanggung jawab atas driver GPU (instalasi, patch, pembaruan)? Sebutkan pemiliknya: tim kami, "
     "vendor, atau seseorang."),
    ("owner-cuda", "CUDA",
     "Who owns the CUDA stack (CUDA, cuDNN, NCCL versions)? Name the owner: our team, the vendor, or a person.",
     "Qui gère la pile CUDA (versions de CUDA, cuDNN, NCCL) ? Nommez le responsable : notre équipe, le fournisseur "
     "ou une personne.",
     "Siapa yang bertanggung jawab atas stack CUDA (versi CUDA, cuDNN, NCCL)? Sebutkan pemiliknya: tim kami, "
     "vendor, atau seseorang."),
    ("owner-containers", "containers",
     "Who owns the container images and runtime? Name the owner: our team, the vendor, or a person.",
     "Qui gère les images et le runtime de conteneurs ? Nommez le responsable : notre équipe, le fournisseur ou une "
     "personne.",
     "Siapa yang bertanggung jawab atas image dan runtime container? Sebutkan pemiliknya: tim kami, vendor, atau "
     "seseorang."),
    ("owner-model-server", "model server",
     "Who owns the model server (vLLM, SGLang, TensorRT-LLM, Triton…)? Name the owner: our team, the vendor, or a "
     "person.",
     "Qui gère le serveur de modèles (vLLM, SGLang, TensorRT-LLM, Triton…) ? Nommez le responsable : notre équipe, "
     "le fournisseur ou une personne.",
     "Siapa yang bertanggung jawab atas server model (vLLM, SGLang, TensorRT-LLM, Triton…)? Sebutkan pemiliknya: "
     "tim kami, vendor, atau seseorang."),
    ("owner-autoscaling", "autoscaling",
     "Who owns autoscaling? Name the owner: our team, the vendor, or a person.",
     "Qui gère l’autoscaling ? Nommez le responsable : notre équipe, le fournisseur ou une personne.",
     "Siapa yang bertanggung jawab atas autoscaling? Sebutkan pemiliknya: tim kami, vendor, atau seseorang."),
    ("owner-quotas", "quotas",
     "Who owns the GPU quotas? Name the owner: our team, the vendor, or a person.",
     "Qui gère les quotas de GPU ? Nommez le responsable : notre équipe, le fournisseur ou une personne.",
     "Siapa yang bertanggung jawab atas kuota GPU? Sebutkan pemiliknya: tim kami, vendor, atau seseorang."),
    ("owner-logging", "logging",
     "Who owns logging? Name the owner: our team, the vendor, or a person.",
     "Qui gère la journalisation ? Nommez le responsable : notre équipe, le fournisseur ou une personne.",
     "Siapa yang bertanggung jawab atas logging? Sebutkan pemiliknya: tim kami, vendor, atau seseorang."),
    ("owner-alerts", "alerts",
     "Who owns the alerts (and answers them)? Name the owner: our team, the vendor, or a person.",
     "Qui gère les alertes (et y répond) ? Nommez le responsable : notre équipe, le fournisseur ou une personne.",
     "Siapa yang bertanggung jawab atas peringatan (dan menanggapinya)? Sebutkan pemiliknya: tim kami, vendor, atau "
     "seseorang."),
    ("owner-incidents", "incidents",
     "Who owns incidents? Name the owner: our team, the vendor, or a person.",
     "Qui gère les incidents ? Nommez le responsable : notre équipe, le fournisseur ou une personne.",
     "Siapa yang bertanggung jawab atas insiden? Sebutkan pemiliknya: tim kami, vendor, atau seseorang."),
    ("owner-spend-reporting", "spend reporting",
     "Who owns spend reporting? Name the owner: our team, the vendor, or a person.",
     "Qui gère le reporting des dépenses ? Nommez le responsable : notre équipe, le fournisseur ou une personne.",
     "Siapa yang bertanggung jawab atas pelaporan biaya? Sebutkan pemiliknya: tim kami, vendor, atau seseorang."),
]
OWNERSHIP_CODES = tuple(code for code, *_rest in OWNERSHIP_LINES)
OWNERSHIP_GROUP = "software"

QUESTIONS = [
    *PROCUREMENT_QUESTIONS,
    *((code, OWNERSHIP_GROUP, text_en, text_fr, text_id) for code, _line, text_en, text_fr, text_id in OWNERSHIP_LINES),
]

#: Answers that name nobody: an ownership line answered with one of these has no owner.
NO_OWNER = frozenset({
    "", "-", "--", "?", "??", "none", "nobody", "no one", "noone", "no owner", "n/a", "na", "tbd", "tba", "todo",
    "unknown", "unassigned", "to be decided", "to be defined", "personne", "aucun", "inconnu", "à définir",
    "tidak ada", "belum ada", "tidak diketahui",
})


def names_an_owner(status: str, value: str) -> bool:
    """An ownership line is owned when it is answered ("answered", not "not provided" nor "not applicable") with a
    name: the team, the vendor or a person, not a placeholder such as "TBD" or "nobody"."""
    return status == "answered" and " ".join((value or "").split()).strip(" .").lower() not in NO_OWNER


# The larger the commitment, the more evidence (the guide): each tier adds questions; the top one wants evidence.
TIERS = [
    # (English, French, Indonesian, from a commitment of (USD), evidence required, question codes)
    ("Every quote", "Tout devis", "Setiap penawaran", "0", False,
     ["gpu-model-memory-node", "commercial-model", "commitment-terms", "ancillary-costs", "idle-capacity-billing"]),
    ("Commitment from 10,000 USD", "Engagement à partir de 10 000 USD", "Komitmen mulai 10.000 USD", "10000", False,
     ["interconnect", "node-shape", "placement", "software-versions", "access-model", "usage-export",
      "network-boundary", "iam-audit", "data-retention"]),
    ("Commitment from 100,000 USD", "Engagement à partir de 100 000 USD", "Komitmen mulai 100.000 USD", "100000",
     True, [code for code, *_rest in PROCUREMENT_QUESTIONS]),
]


def load(apps, schema_editor):
    question_model = apps.get_model("quotes", "ChecklistQuestion")
    tier_model = apps.get_model("quotes", "CommitmentTier")
    by_code = {}
    positions: dict[str, int] = {}
    for code, group, text_en, text_fr, text_id in QUESTIONS:
        positions[group] = positions.get(group, 0) + 1
        by_code[code], _created = question_model.objects.update_or_create(
            code=code,
            defaults={
                "group": group,
                "position": positions[group],
                "text_en": text_en,
                "text_fr": text_fr,
                "text_id": text_id,
            },
        )
    if tier_model.objects.exists():
        return
    for name_en, name_fr, name_id, minimum, evidence_required, codes in TIERS:
        tier = tier_model.objects.create(
            name_en=name_en,
            name_fr=name_fr,
            name_id=name_id,
            minimum_commitment=minimum,
            currency="USD",
            evidence_required=evidence_required,
        )
        tier.required_questions.set([by_code[code] for code in codes])


def unload(apps, schema_editor):
    apps.get_model("quotes", "CommitmentTier").objects.all().delete()
    apps.get_model("quotes", "ChecklistQuestion").objects.filter(code__in=[row[0] for row in QUESTIONS]).delete()
