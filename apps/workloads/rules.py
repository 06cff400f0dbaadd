"""The guide's tables as data: step 1 readiness, step 2 metrics, the quick-answer matrix, the GPU cheat sheet and the
rent/reserve/buy/API table, each text in English, French and Indonesian.

Plain Python (no Django): the web layer picks the language with `pick()`; the checks that use these tables live in
readiness.py and shortlist.py. Codes (workload types, field names, metric codes) match apps/workloads/models.py, and
tests/test_rules.py checks that they stay in step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

LANGUAGES = ("en", "fr", "id")
Texts = Mapping[str, str]


def pick(texts: Texts, language: str | None) -> str:
    """The text in `language` ("fr", "fr-ca", "id" …), else English."""
    code = (language or "en").split("-")[0].lower()
    return texts.get(code) or texts["en"]


# --------------------------------------------------------------------------------------------------------------------
# Workload types and the groups the tables use
# --------------------------------------------------------------------------------------------------------------------

TRAINING = "training"
FULL_FINE_TUNING = "full_fine_tuning"
LORA_FINE_TUNING = "lora_fine_tuning"
BATCH_INFERENCE = "batch_inference"
REALTIME_INFERENCE = "realtime_inference"
EMBEDDING = "embedding"
IMAGE_GENERATION = "image_generation"
VIDEO_GENERATION = "video_generation"
EVALUATION = "evaluation"
NOTEBOOK = "notebook"

WORKLOAD_TYPES = (
    TRAINING,
    FULL_FINE_TUNING,
    LORA_FINE_TUNING,
    BATCH_INFERENCE,
    REALTIME_INFERENCE,
    EMBEDDING,
    IMAGE_GENERATION,
    VIDEO_GENERATION,
    EVALUATION,
    NOTEBOOK,
)
ALL = frozenset(WORKLOAD_TYPES)
TRAINS = frozenset({TRAINING, FULL_FINE_TUNING, LORA_FINE_TUNING})
SERVES_LLM = frozenset({BATCH_INFERENCE, REALTIME_INFERENCE, EVALUATION})
MEDIA = frozenset({IMAGE_GENERATION, VIDEO_GENERATION})
PRODUCTION = ALL - {NOTEBOOK}

# How the memory estimate treats each type: "training" (model states, activations), "inference" (weights, KV cache,
# activation peak), or "media" (a diffusion denoiser: weights and the activation peak over its latent tokens).
ESTIMATE_KIND: Mapping[str, str] = MappingProxyType(
    {
        TRAINING: "training",
        FULL_FINE_TUNING: "training",
        LORA_FINE_TUNING: "training",
        BATCH_INFERENCE: "inference",
        REALTIME_INFERENCE: "inference",
        EMBEDDING: "inference",
        IMAGE_GENERATION: "media",
        VIDEO_GENERATION: "media",
        EVALUATION: "inference",
        NOTEBOOK: "inference",
    }
)


# --------------------------------------------------------------------------------------------------------------------
# Step 1: which fields a workload summary needs, per workload type, and why ("if you cannot fill this table, pause
# GPU selection")
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """Fields a summary must state before it is ready, for the workload types in `applies_to`.

    `check`: "present" (every field has a value), or the name of a test in readiness.py ("parameter_count": a stated
    count or a layer shape it can be computed from; "ffn": a dense or expert FFN size). `when`: extra conditions on
    other fields ({"architecture": ("moe",)}).
    """

    code: str
    fields: tuple[str, ...]
    applies_to: frozenset[str]
    why: Texts
    check: str = "present"
    when: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


READINESS: tuple[Requirement, ...] = (
    Requirement(
        "workload_type",
        ("workload_type",),
        ALL,
        {
            "en": "Training, serving and media load a GPU in different ways; every later comparison starts here.",
            "fr": "L’entraînement, le service et les médias sollicitent un GPU différemment ; toute comparaison "
            "part de là.",
            "id": "Pelatihan, layanan, dan media membebani GPU dengan cara berbeda; setiap perbandingan dimulai "
            "dari sini.",
        },
    ),
    Requirement(
        "model_name",
        ("model_name",),
        ALL,
        {
            "en": "Quotes and benchmarks must test the same model, or its closest proxy.",
            "fr": "Les devis et les benchmarks doivent tester le même modèle, ou son proxy le plus proche.",
            "id": "Penawaran dan benchmark harus menguji model yang sama, atau proksi terdekatnya.",
        },
    ),
    Requirement(
        "architecture",
        ("architecture",),
        ALL,
        {
            "en": "The architecture decides which memory terms apply: a KV cache, experts, or none.",
            "fr": "L’architecture décide quels termes de mémoire s’appliquent : cache KV, experts, ou aucun.",
            "id": "Arsitektur menentukan komponen memori yang berlaku: cache KV, expert, atau tidak ada.",
        },
    ),
    Requirement(
        "parameter_count",
        ("params",),
        ALL,
        {
            "en": "Weights take parameters × bytes per parameter: state the count, or the layer shape it follows from.",
            "fr": "Les poids occupent paramètres × octets par paramètre : indiquez le nombre, ou la forme des "
            "couches dont il découle.",
            "id": "Bobot memakan parameter × byte per parameter: isi jumlahnya, atau bentuk lapisan yang "
            "menghasilkannya.",
        },
        check="parameter_count",
    ),
    Requirement(
        "precision",
        ("precision",),
        ALL,
        {
            "en": "FP16, FP8 or INT4 weights change the memory by 2–4× and so which GPUs fit.",
            "fr": "Des poids en FP16, FP8 ou INT4 changent la mémoire d’un facteur 2 à 4, donc les GPU qui "
            "conviennent.",
            "id": "Bobot FP16, FP8, atau INT4 mengubah memori 2–4× sehingga mengubah GPU mana yang muat.",
        },
    ),
    Requirement(
        "attention_shape",
        ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads"),
        TRAINS | SERVES_LLM,
        {
            "en": "The KV cache and the activations grow with layers, hidden size and (KV) heads; grouped-query "
            "attention cuts the cache by the heads-to-KV-heads ratio.",
            "fr": "Le cache KV et les activations croissent avec les couches, la taille cachée et les têtes (KV) ; "
            "l’attention à requêtes groupées divise le cache par le rapport têtes / têtes KV.",
            "id": "Cache KV dan aktivasi bertambah seiring jumlah lapisan, ukuran hidden, dan head (KV); "
            "grouped-query attention memangkas cache sebesar rasio head terhadap head KV.",
        },
    ),
    Requirement(
        "hidden_size",
        ("hidden_size",),
        frozenset({EMBEDDING}) | MEDIA,
        {
            "en": "The activation peak of one forward pass grows with the hidden size.",
            "fr": "Le pic d’activations d’une passe avant croît avec la taille cachée.",
            "id": "Puncak aktivasi satu forward pass bertambah seiring ukuran hidden.",
        },
    ),
    Requirement(
        "ffn_size",
        ("ffn_size",),
        SERVES_LLM | frozenset({EMBEDDING}) | MEDIA,
        {
            "en": "The FFN intermediates are the largest live tensors of a forward pass.",
            "fr": "Les intermédiaires du FFN sont les plus gros tenseurs vivants d’une passe avant.",
            "id": "Tensor antara FFN adalah tensor aktif terbesar dalam satu forward pass.",
        },
        check="ffn",
    ),
    Requirement(
        "vocab_size",
        ("vocab_size",),
        TRAINS | SERVES_LLM,
        {
            "en": "Logits and the output layer take sequence × vocabulary memory.",
            "fr": "Les logits et la couche de sortie occupent séquence × vocabulaire en mémoire.",
            "id": "Logit dan lapisan output memakan memori sebesar sekuens × kosakata.",
        },
    ),
    Requirement(
        "context_window",
        ("max_context_tokens",),
        SERVES_LLM | frozenset({EMBEDDING}),
        {
            "en": "The p95 context must fit the model's window; a longer window invites longer prompts later.",
            "fr": "Le contexte p95 doit tenir dans la fenêtre du modèle ; une fenêtre plus longue attire des "
            "prompts plus longs.",
            "id": "Konteks p95 harus muat di jendela model; jendela yang lebih panjang mengundang prompt yang lebih "
            "panjang nanti.",
        },
    ),
    Requirement(
        "modality",
        ("modality",),
        ALL,
        {
            "en": "Text, image, video and audio pipelines stress memory, storage and kernels differently.",
            "fr": "Les pipelines texte, image, vidéo et audio sollicitent différemment la mémoire, le stockage et "
            "les kernels.",
            "id": "Pipeline teks, gambar, video, dan audio membebani memori, penyimpanan, dan kernel secara berbeda.",
        },
    ),
    Requirement(
        "tokenizer",
        ("tokenizer",),
        TRAINS | SERVES_LLM | frozenset({EMBEDDING}),
        {
            "en": "Token counts, and so every cost per token, depend on the tokenizer.",
            "fr": "Le nombre de tokens, donc tout coût par token, dépend du tokenizer.",
            "id": "Jumlah token, dan karenanya setiap biaya per token, bergantung pada tokenizer.",
        },
    ),
    Requirement(
        "model_change_cadence",
        ("model_change_cadence",),
        ALL,
        {
            "en": "A model that changes every month argues against long commitments (mistake 6).",
            "fr": "Un modèle qui change chaque mois plaide contre les engagements longs (erreur 6).",
            "id": "Model yang berganti setiap bulan tidak cocok dengan komitmen jangka panjang (kesalahan 6).",
        },
    ),
    Requirement(
        "input_tokens",
        ("mean_input_tokens", "p95_input_tokens"),
        SERVES_LLM | frozenset({EMBEDDING}),
        {
            "en": "Memory is sized at the p95 input, cost at the mean.",
            "fr": "La mémoire se dimensionne sur l’entrée p95, le coût sur la moyenne.",
            "id": "Memori diukur pada input p95, biaya pada rata-rata.",
        },
    ),
    Requirement(
        "output_tokens",
        ("mean_output_tokens", "p95_output_tokens"),
        SERVES_LLM,
        {
            "en": "The KV cache holds input and output tokens; output length also sets the decode time.",
            "fr": "Le cache KV contient les tokens d’entrée et de sortie ; la longueur de sortie fixe aussi le "
            "temps de décodage.",
            "id": "Cache KV menyimpan token input dan output; panjang output juga menentukan waktu decode.",
        },
    ),
    Requirement(
        "image_size",
        ("image_width_px", "image_height_px"),
        MEDIA,
        {
            "en": "The image size sets the number of latent tokens the denoiser works on.",
            "fr": "La taille d’image fixe le nombre de tokens latents traités par le débruiteur.",
            "id": "Ukuran gambar menentukan jumlah token laten yang diproses denoiser.",
        },
    ),
    Requirement(
        "video_length",
        ("video_duration_seconds", "video_frames_per_second"),
        frozenset({VIDEO_GENERATION}),
        {
            "en": "Duration × frame rate multiplies the latent tokens of a clip.",
            "fr": "Durée × fréquence d’images multiplie les tokens latents d’un clip.",
            "id": "Durasi × laju bingkai melipatgandakan token laten sebuah klip.",
        },
    ),
    Requirement(
        "batch_size",
        ("batch_size",),
        TRAINS | frozenset({BATCH_INFERENCE, EMBEDDING, EVALUATION}) | MEDIA,
        {
            "en": "Each sequence or image in a batch adds its own activations and cache.",
            "fr": "Chaque séquence ou image d’un lot ajoute ses propres activations et son cache.",
            "id": "Setiap sekuens atau gambar dalam batch menambah aktivasi dan cache-nya sendiri.",
        },
    ),
    Requirement(
        "concurrency",
        ("concurrent_sessions_mean", "concurrent_sessions_peak"),
        frozenset({REALTIME_INFERENCE}),
        {
            "en": "A GPU that fits one user may not fit production concurrency: the KV cache is sized at the peak.",
            "fr": "Un GPU qui convient à un utilisateur peut échouer à la concurrence de production : le cache KV "
            "se dimensionne sur le pic.",
            "id": "GPU yang cukup untuk satu pengguna belum tentu cukup untuk konkurensi produksi: cache KV diukur "
            "pada puncaknya.",
        },
    ),
    Requirement(
        "arrival_rate",
        ("arrival_rate_mean", "arrival_rate_peak"),
        frozenset({REALTIME_INFERENCE, EMBEDDING}),
        {
            "en": "The benchmark replays this load, and the peak sets how many nodes are needed at the SLO.",
            "fr": "Le benchmark rejoue cette charge, et le pic fixe le nombre de nœuds nécessaires au SLO.",
            "id": "Benchmark memutar ulang beban ini, dan puncaknya menentukan jumlah node yang dibutuhkan pada SLO.",
        },
    ),
    Requirement(
        "records_per_job",
        ("records_per_job",),
        frozenset({BATCH_INFERENCE, EVALUATION}),
        {
            "en": "A batch job is sized and billed by the records it must finish.",
            "fr": "Un job par lots se dimensionne et se facture selon les enregistrements qu’il doit traiter.",
            "id": "Tugas batch diukur dan ditagih berdasarkan record yang harus diselesaikan.",
        },
    ),
    Requirement(
        "demand",
        ("demand_per_month",),
        PRODUCTION,
        {
            "en": "Cost per accepted output needs the accepted outputs per month.",
            "fr": "Le coût par sortie acceptée a besoin des sorties acceptées par mois.",
            "id": "Biaya per output yang diterima memerlukan jumlah output yang diterima per bulan.",
        },
    ),
    Requirement(
        "operating_hours",
        ("hours_per_day", "days_per_month"),
        ALL,
        {
            "en": "Hours of use decide between on-demand and reserved capacity and how much of it sits idle.",
            "fr": "Les heures d’utilisation départagent capacité à la demande et réservée, et la part inactive.",
            "id": "Jam pemakaian menentukan pilihan kapasitas on-demand atau reserved dan berapa banyak yang "
            "menganggur.",
        },
    ),
    Requirement(
        "training_plan",
        ("tokens_to_train", "training_sequence_length", "checkpoint_interval_minutes"),
        TRAINS,
        {
            "en": "A run's cost is its GPU-hours to the target plus checkpointing; the sequence length sets the "
            "activations.",
            "fr": "Le coût d’une exécution, ce sont ses heures GPU jusqu’à la cible plus le checkpointing ; la "
            "longueur de séquence fixe les activations.",
            "id": "Biaya satu proses adalah jam GPU hingga target ditambah checkpointing; panjang sekuens "
            "menentukan aktivasi.",
        },
    ),
    Requirement(
        "eval_target",
        ("target_eval_metric", "target_eval_score"),
        TRAINS,
        {
            "en": "A training run only counts as completed when it reaches the target evaluation score.",
            "fr": "Une exécution d’entraînement ne compte comme terminée que si elle atteint le score d’évaluation "
            "cible.",
            "id": "Proses pelatihan baru dihitung selesai bila mencapai skor evaluasi target.",
        },
    ),
    Requirement(
        "failure_rate",
        ("expected_failures_per_1000_gpu_hours", "failure_rate_source"),
        TRAINS,
        {
            "en": "Restarts waste GPU-hours: the expected failure rate, with its source, prices that risk.",
            "fr": "Les redémarrages gaspillent des heures GPU : le taux de pannes attendu, avec sa source, chiffre "
            "ce risque.",
            "id": "Restart membuang jam GPU: perkiraan tingkat kegagalan, beserta sumbernya, menghitung risiko itu.",
        },
    ),
    Requirement(
        "lora_rank",
        ("lora_rank",),
        frozenset({LORA_FINE_TUNING}),
        {
            "en": "The adapter rank sets the trainable parameters and their optimizer states.",
            "fr": "Le rang de l’adaptateur fixe les paramètres entraînables et leurs états d’optimiseur.",
            "id": "Rank adapter menentukan parameter yang dilatih dan state optimizer-nya.",
        },
    ),
    Requirement(
        "unit_of_success",
        ("unit_of_success",),
        ALL,
        {
            "en": "Step 2 divides the cost by accepted outputs: name what counts as one.",
            "fr": "L’étape 2 divise le coût par les sorties acceptées : nommez ce qui en compte pour une.",
            "id": "Langkah 2 membagi biaya dengan output yang diterima: sebutkan apa yang dihitung sebagai satu.",
        },
    ),
    Requirement(
        "quality_acceptance",
        ("quality_acceptance_rate", "quality_acceptance_source"),
        PRODUCTION,
        {
            "en": "Benchmark accepted outputs, not generated ones (mistake 4): state the expected acceptance rate "
            "and where it comes from.",
            "fr": "Mesurez les sorties acceptées, pas les sorties générées (erreur 4) : indiquez le taux "
            "d’acceptation attendu et sa source.",
            "id": "Ukur output yang diterima, bukan yang dihasilkan (kesalahan 4): isi tingkat penerimaan yang "
            "diharapkan dan sumbernya.",
        },
    ),
    Requirement(
        "latency_class",
        ("latency_class",),
        ALL,
        {
            "en": "Offline work can trade latency for throughput; sub-second work cannot.",
            "fr": "Un travail hors ligne peut échanger de la latence contre du débit ; un travail sous la seconde "
            "ne le peut pas.",
            "id": "Pekerjaan offline dapat menukar latensi dengan throughput; pekerjaan di bawah satu detik tidak.",
        },
    ),
    Requirement(
        "latency_limits",
        ("p95_ttft_ms", "p99_ttft_ms", "p95_tpot_ms", "p95_e2e_ms", "p99_e2e_ms", "streaming"),
        frozenset({REALTIME_INFERENCE}),
        {
            "en": "Real-time serving is judged at the tail: the p95/p99 limits define an accepted response.",
            "fr": "Le service en temps réel se juge sur la queue : les limites p95/p99 définissent une réponse "
            "acceptée.",
            "id": "Layanan real-time dinilai pada ekornya: batas p95/p99 mendefinisikan respons yang diterima.",
        },
    ),
    Requirement(
        "embedding_latency",
        ("p95_e2e_ms",),
        frozenset({EMBEDDING}),
        {
            "en": "Online embedding and reranking sit inside another request's latency budget.",
            "fr": "L’embedding et le reranking en ligne s’inscrivent dans le budget de latence d’une autre requête.",
            "id": "Embedding dan reranking online berada di dalam anggaran latensi permintaan lain.",
        },
    ),
    Requirement(
        "operating_mode",
        ("operating_mode",),
        ALL,
        {
            "en": "Always-on, scheduled, bursty and experimental work call for different capacity models.",
            "fr": "Un service permanent, planifié, en rafales ou expérimental appelle des modèles de capacité "
            "différents.",
            "id": "Pekerjaan selalu aktif, terjadwal, lonjakan, dan eksperimen memerlukan model kapasitas yang "
            "berbeda.",
        },
    ),
    Requirement(
        "operating_boundary",
        ("operating_boundary",),
        ALL,
        {
            "en": "Data and network boundaries rule out some providers before any price is compared.",
            "fr": "Les frontières de données et de réseau excluent certains fournisseurs avant toute comparaison "
            "de prix.",
            "id": "Batas data dan jaringan menyingkirkan sebagian penyedia sebelum harga dibandingkan.",
        },
    ),
    Requirement(
        "tools",
        ("tools",),
        PRODUCTION,
        {
            "en": "The provider must support your serving stack and scheduler (procurement checklist).",
            "fr": "Le fournisseur doit prendre en charge votre pile de service et votre planificateur (liste de "
            "contrôle d’achat).",
            "id": "Penyedia harus mendukung serving stack dan scheduler Anda (daftar periksa pengadaan).",
        },
    ),
)


# --------------------------------------------------------------------------------------------------------------------
# Step 2: the decision metric per workload
# --------------------------------------------------------------------------------------------------------------------

METRICS: Mapping[str, Texts] = MappingProxyType(
    {
        "cost_per_training_run": {
            "en": "Cost per completed training run that reaches the target eval score",
            "fr": "Coût par exécution d’entraînement terminée qui atteint le score d’évaluation cible",
            "id": "Biaya satu siklus pelatihan selesai yang mencapai skor evaluasi target",
        },
        "cost_per_checkpoint": {
            "en": "Cost per accepted fine-tuned checkpoint",
            "fr": "Coût par checkpoint fine-tuné accepté",
            "id": "Biaya satu checkpoint hasil fine-tuning yang diterima",
        },
        "cost_per_response": {
            "en": "Cost per accepted response at the target p95/p99 latency",
            "fr": "Coût par réponse acceptée à la latence p95/p99 cible",
            "id": "Biaya satu respons yang diterima pada latensi p95/p99 target",
        },
        "cost_per_record_or_token": {
            "en": "Cost per accepted record or accepted output token",
            "fr": "Coût par enregistrement accepté ou par token de sortie accepté",
            "id": "Biaya satu record yang diterima atau satu token output yang diterima",
        },
        "cost_per_task": {
            "en": "Cost per accepted task, accepted patch, or resolved issue",
            "fr": "Coût par tâche acceptée, correctif accepté ou ticket résolu",
            "id": "Biaya satu tugas yang diterima, patch yang diterima, atau issue yang diselesaikan",
        },
        "cost_per_image": {
            "en": "Cost per accepted image after quality filters",
            "fr": "Coût par image acceptée après les filtres de qualité",
            "id": "Biaya satu gambar yang diterima setelah filter kualitas",
        },
        "cost_per_clip_second": {
            "en": "Cost per accepted second or accepted clip",
            "fr": "Coût par seconde acceptée ou par clip accepté",
            "id": "Biaya satu detik yang diterima atau satu klip yang diterima",
        },
        "cost_per_eval_suite": {
            "en": "Cost per completed eval suite and time to answer",
            "fr": "Coût par suite d’évaluation terminée et délai de réponse",
            "id": "Biaya satu rangkaian evaluasi yang selesai dan waktu hingga respons",
        },
    }
)

# The step-2 row each workload type starts from. Embedding and reranking are billed per accepted record; a notebook
# is judged like a code agent, by the tasks it gets done.
PROPOSED_METRIC: Mapping[str, str] = MappingProxyType(
    {
        TRAINING: "cost_per_training_run",
        FULL_FINE_TUNING: "cost_per_checkpoint",
        LORA_FINE_TUNING: "cost_per_checkpoint",
        BATCH_INFERENCE: "cost_per_record_or_token",
        REALTIME_INFERENCE: "cost_per_response",
        EMBEDDING: "cost_per_record_or_token",
        IMAGE_GENERATION: "cost_per_image",
        VIDEO_GENERATION: "cost_per_clip_second",
        EVALUATION: "cost_per_eval_suite",
        NOTEBOOK: "cost_per_task",
    }
)


# --------------------------------------------------------------------------------------------------------------------
# The GPU cheat sheet
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuFamily:
    """One row of the guide's GPU cheat sheet; `catalog_names` are the catalog GPU names that belong to it."""

    code: str
    label: str  # a product name, the same in every language
    catalog_names: tuple[str, ...]
    role: Texts
    best_fit: Texts
    watch: Texts

    def matches(self, gpu_name: str) -> bool:
        return any(gpu_name == name or gpu_name.startswith(name + " ") for name in self.catalog_names)


GPU_FAMILIES: tuple[GpuFamily, ...] = (
    GpuFamily(
        "a100",
        "NVIDIA A100",
        ("NVIDIA A100",),
        {
            "en": "Mature baseline for training and inference",
            "fr": "Base mature pour l’entraînement et l’inférence",
            "id": "Platform dasar yang matang untuk pelatihan dan inferensi",
        },
        {
            "en": "Existing recipes, 40GB/80GB variants, broad cloud availability, budget-sensitive workloads",
            "fr": "Recettes existantes, variantes 40 Go/80 Go, large disponibilité dans le cloud, charges "
            "sensibles au budget",
            "id": "Resep yang sudah ada, varian 40GB/80GB, ketersediaan luas di cloud, beban kerja yang sensitif "
            "terhadap anggaran",
        },
        {
            "en": "Older generation; lower memory bandwidth and fewer newer precision paths than H100/H200/B200",
            "fr": "Génération plus ancienne ; bande passante mémoire plus faible et moins de nouveaux formats de "
            "précision que H100/H200/B200",
            "id": "Generasi lebih lama; bandwidth memori lebih rendah dan dukungan untuk format presisi yang lebih "
            "baru lebih terbatas dibandingkan H100/H200/B200",
        },
    ),
    GpuFamily(
        "h100",
        "NVIDIA H100",
        ("NVIDIA H100",),
        {
            "en": "Hopper-class workhorse for training and inference",
            "fr": "Cheval de trait de classe Hopper pour l’entraînement et l’inférence",
            "id": "Andalan kelas Hopper untuk pelatihan dan inferensi",
        },
        {
            "en": "Strong framework maturity, FP8 Transformer Engine support, high memory bandwidth, NVLink/NVSwitch "
            "options",
            "fr": "Grande maturité des frameworks, prise en charge FP8 du Transformer Engine, bande passante "
            "mémoire élevée, options NVLink/NVSwitch",
            "id": "Framework yang sangat matang, dukungan FP8 Transformer Engine, bandwidth memori tinggi, opsi "
            "NVLink/NVSwitch",
        },
        {
            "en": "Supply and pricing can still constrain; memory may be insufficient for very long-context, "
            "high-concurrency inference",
            "fr": "L’offre et les prix peuvent encore limiter ; la mémoire peut manquer pour l’inférence à très "
            "long contexte et forte concurrence",
            "id": "Pasokan dan harga masih dapat menjadi kendala; memori mungkin tidak mencukupi untuk inferensi "
            "dengan konteks sangat panjang dan tingkat konkurensi tinggi",
        },
    ),
    GpuFamily(
        "h200",
        "NVIDIA H200",
        ("NVIDIA H200",),
        {
            "en": "Hopper variant with larger memory capacity",
            "fr": "Variante Hopper à plus grande capacité mémoire",
            "id": "Varian Hopper dengan kapasitas memori yang lebih besar",
        },
        {
            "en": "More HBM capacity and bandwidth than H100; useful for long-context inference and memory-heavy jobs",
            "fr": "Plus de capacité et de bande passante HBM que le H100 ; utile pour l’inférence à long contexte "
            "et les jobs gourmands en mémoire",
            "id": "Kapasitas HBM dan bandwidth lebih besar daripada H100; berguna untuk inferensi dengan konteks "
            "panjang dan tugas yang membutuhkan banyak memori",
        },
        {
            "en": "Availability and pricing vary; compare against H100 for your specific workload",
            "fr": "Disponibilité et prix variables ; comparez avec le H100 pour votre charge de travail",
            "id": "Ketersediaan dan harga bervariasi; bandingkan dengan H100 untuk beban kerja spesifik Anda",
        },
    ),
    GpuFamily(
        "b200",
        "NVIDIA B200",
        ("NVIDIA B200",),
        {
            "en": "Blackwell-class accelerator",
            "fr": "Accélérateur de classe Blackwell",
            "id": "Akselerator kelas Blackwell",
        },
        {
            "en": "Heavy training and inference, newer low-precision format support, large memory capacity and high "
            "bandwidth",
            "fr": "Entraînement et inférence lourds, nouveaux formats de faible précision, grande capacité "
            "mémoire et bande passante élevée",
            "id": "Pelatihan dan inferensi berat, dukungan format presisi rendah yang lebih baru, kapasitas memori "
            "besar, dan bandwidth tinggi",
        },
        {
            "en": "Requires stack readiness, provider availability, and topology checks",
            "fr": "Exige une pile logicielle prête, la disponibilité chez le fournisseur et des vérifications de "
            "topologie",
            "id": "Memerlukan kesiapan stack, ketersediaan di penyedia, dan pemeriksaan topologi",
        },
    ),
    GpuFamily(
        "gb200",
        "NVIDIA GB200",
        ("NVIDIA GB200",),
        {
            "en": "Large-scale training and high-density inference (rack-scale systems)",
            "fr": "Entraînement à grande échelle et inférence à haute densité (systèmes à l’échelle du rack)",
            "id": "Pelatihan berskala besar dan inferensi berdensitas tinggi (sistem skala rak)",
        },
        {
            "en": "Cluster-scale jobs where the system architecture matters as much as the GPU chip",
            "fr": "Jobs à l’échelle du cluster où l’architecture du système compte autant que la puce GPU",
            "id": "Tugas berskala klaster yang arsitektur sistemnya sama pentingnya dengan chip GPU itu sendiri",
        },
        {
            "en": "Procurement and operations are system-level decisions, not just a GPU choice",
            "fr": "L’achat et l’exploitation sont des décisions au niveau du système, pas un simple choix de GPU",
            "id": "Pengadaan dan pengoperasian merupakan keputusan tingkat sistem, bukan sekadar satu GPU",
        },
    ),
    GpuFamily(
        "l40s",
        "NVIDIA L40S",
        ("NVIDIA L40S",),
        {
            "en": "Cost-sensitive inference and media jobs",
            "fr": "Inférence et jobs médias sensibles au coût",
            "id": "Inferensi dan tugas media yang sensitif terhadap biaya",
        },
        {
            "en": "48GB memory, image/video pipelines, small LLM inference, batch jobs",
            "fr": "48 Go de mémoire, pipelines image/vidéo, inférence de petits LLM, jobs par lots",
            "id": "Memori berkapasitas 48GB, pipeline gambar/video, inferensi LLM kecil, tugas batch",
        },
        {
            "en": "Not a universal replacement for H100/H200 in large training or strict p99 LLM inference",
            "fr": "Pas un remplaçant universel des H100/H200 pour le grand entraînement ou l’inférence LLM à p99 "
            "strict",
            "id": "Bukan pengganti universal untuk H100/H200 dalam pelatihan skala besar atau inferensi LLM dengan "
            "persyaratan p99 yang ketat",
        },
    ),
    GpuFamily(
        "rtx",
        "NVIDIA RTX",
        ("NVIDIA RTX",),
        {
            "en": "Local experimentation and creator workflows (RTX-class local GPUs)",
            "fr": "Expérimentation locale et workflows de créateurs (GPU locaux de classe RTX)",
            "id": "Eksperimen lokal dan alur kerja untuk kreator konten (GPU lokal kelas RTX)",
        },
        {
            "en": "Prototyping, small models, personal workstation iteration",
            "fr": "Prototypage, petits modèles, itération sur un poste de travail personnel",
            "id": "Pembuatan prototipe, model kecil, iterasi pada workstation pribadi",
        },
        {
            "en": "Limited memory, less data-center operating track record, and not a production cluster by itself",
            "fr": "Mémoire limitée, moins d’historique d’exploitation en centre de données, et pas un cluster de "
            "production à lui seul",
            "id": "Kapasitas memori terbatas, rekam jejak pengoperasian di pusat data yang lebih terbatas, dan "
            "dengan sendirinya bukan merupakan klaster produksi",
        },
    ),
)
GPU_FAMILIES_BY_CODE: Mapping[str, GpuFamily] = MappingProxyType({family.code: family for family in GPU_FAMILIES})


def family_of(gpu_name: str) -> GpuFamily | None:
    """The cheat-sheet row of a catalog GPU ("NVIDIA H200" → h200), or None for a GPU the guide does not list.
    The longest matching name wins, so "NVIDIA GB200" is not taken for a B200."""
    matches = [family for family in GPU_FAMILIES if family.matches(gpu_name)]
    return max(matches, key=lambda family: max(len(name) for name in family.catalog_names), default=None)


# --------------------------------------------------------------------------------------------------------------------
# The quick-answer matrix
# --------------------------------------------------------------------------------------------------------------------

# What a workload's ranking weighs after memory fit (issue 3): the multi-GPU interconnect for training, the decode
# speed behind p99 latency for real-time serving, and for throughput work the least memory that still fits (cost per
# output, until quotes give real prices).
NEED_INTERCONNECT = "interconnect"
NEED_TAIL_LATENCY = "tail_latency"
NEED_COST_PER_OUTPUT = "cost_per_output"
NEEDS = (NEED_INTERCONNECT, NEED_TAIL_LATENCY, NEED_COST_PER_OUTPUT)

NEED_TEXTS: Mapping[str, Texts] = MappingProxyType(
    {
        NEED_INTERCONNECT: {
            "en": "Multi-GPU interconnect first (NVLink bandwidth from the catalog): training scales across GPUs.",
            "fr": "L’interconnexion multi-GPU d’abord (bande passante NVLink du catalogue) : l’entraînement "
            "s’étend sur plusieurs GPU.",
            "id": "Interkoneksi multi-GPU lebih dulu (bandwidth NVLink dari katalog): pelatihan berskala di "
            "banyak GPU.",
        },
        NEED_TAIL_LATENCY: {
            "en": "p99 latency first: decoding is bound by memory bandwidth (from the catalog), so faster memory "
            "ranks higher.",
            "fr": "La latence p99 d’abord : le décodage est limité par la bande passante mémoire (du catalogue), "
            "la mémoire la plus rapide passe devant.",
            "id": "Latensi p99 lebih dulu: decoding dibatasi bandwidth memori (dari katalog), jadi memori yang "
            "lebih cepat berperingkat lebih tinggi.",
        },
        NEED_COST_PER_OUTPUT: {
            "en": "Cost per output first: the smallest GPU that fits wastes the least; quotes replace this with real "
            "prices.",
            "fr": "Le coût par sortie d’abord : le plus petit GPU qui convient gaspille le moins ; les devis "
            "remplaceront ce critère par de vrais prix.",
            "id": "Biaya per output lebih dulu: GPU terkecil yang muat paling sedikit terbuang; penawaran akan "
            "menggantinya dengan harga sebenarnya.",
        },
    }
)


@dataclass(frozen=True)
class QuickAnswer:
    """One row of the quick-answer matrix: what the workload prioritises, the GPU directions and what to watch."""

    code: str
    workload: Texts
    prioritises: Texts
    directions: Texts
    families: tuple[str, ...]  # the cheat-sheet rows named in the directions, in the guide's order
    watch: Texts
    need: str


QUICK_ANSWERS: tuple[QuickAnswer, ...] = (
    QuickAnswer(
        "pretraining",
        {
            "en": "Pre-training or large-scale training",
            "fr": "Pré-entraînement ou entraînement à grande échelle",
            "id": "Pra-pelatihan atau pelatihan skala besar",
        },
        {
            "en": "Multi-node networking, HBM capacity, memory bandwidth, BF16/FP8 performance, checkpoint I/O",
            "fr": "Réseau multi-nœuds, capacité HBM, bande passante mémoire, performances BF16/FP8, I/O de checkpoint",
            "id": "Jaringan multinode, kapasitas HBM, bandwidth memori, performa BF16/FP8, I/O checkpoint",
        },
        {
            "en": "H100/H200, B200/GB200-class systems, managed training clusters",
            "fr": "H100/H200, systèmes de classe B200/GB200, clusters d’entraînement gérés",
            "id": "H100/H200, sistem kelas B200/GB200, klaster pelatihan terkelola",
        },
        ("h100", "h200", "b200", "gb200"),
        {
            "en": "Hourly price is secondary to time-to-completed-run and restart risk",
            "fr": "Le prix horaire passe après le temps jusqu’à l’exécution terminée et le risque de redémarrage",
            "id": "Harga per jam bersifat sekunder dibandingkan waktu penyelesaian proses dan risiko memulai ulang",
        },
        NEED_INTERCONNECT,
    ),
    QuickAnswer(
        "full_fine_tuning",
        {"en": "Full fine-tuning", "fr": "Fine-tuning complet", "id": "Fine-tuning penuh"},
        {
            "en": "Memory headroom, optimizer state capacity, tensor parallelism, storage locality",
            "fr": "Marge mémoire, capacité pour les états de l’optimiseur, parallélisme tensoriel, localité du "
            "stockage",
            "id": "Cadangan memori, kapasitas status optimizer, paralelisme tensor, lokalitas penyimpanan",
        },
        {
            "en": "H100, H200, B200, A100 for smaller models",
            "fr": "H100, H200, B200, A100 pour les modèles plus petits",
            "id": "H100, H200, B200, A100 untuk model yang lebih kecil",
        },
        ("h100", "h200", "b200", "a100"),
        {
            "en": "VRAM shortfalls can force slower sharding or smaller batch sizes",
            "fr": "Un manque de VRAM peut imposer un sharding plus lent ou des lots plus petits",
            "id": "Kekurangan VRAM dapat memaksa penggunaan sharding yang lebih lambat atau ukuran batch yang "
            "lebih kecil",
        },
        NEED_INTERCONNECT,
    ),
    QuickAnswer(
        "lora",
        {"en": "LoRA/QLoRA fine-tuning", "fr": "Fine-tuning LoRA/QLoRA", "id": "Fine-tuning LoRA/QLoRA"},
        {
            "en": "VRAM fit, CUDA compatibility, price-performance",
            "fr": "Adéquation VRAM, compatibilité CUDA, rapport performance/prix",
            "id": "Kecocokan VRAM, kompatibilitas CUDA, performa per dolar",
        },
        {
            "en": "A100, L40S, H100, H200, high-end local GPUs for small jobs",
            "fr": "A100, L40S, H100, H200, GPU locaux haut de gamme pour les petits jobs",
            "id": "A100, L40S, H100, H200, GPU lokal berperforma tinggi untuk tugas kecil",
        },
        ("a100", "l40s", "h100", "h200", "rtx"),
        {
            "en": "Dataset and context length can change memory needs",
            "fr": "Le jeu de données et la longueur de contexte peuvent changer les besoins en mémoire",
            "id": "Dataset dan panjang konteks dapat mengubah kebutuhan memori",
        },
        NEED_COST_PER_OUTPUT,
    ),
    QuickAnswer(
        "batch_llm",
        {"en": "Batch LLM inference", "fr": "Inférence LLM par lots", "id": "Inferensi batch LLM"},
        {
            "en": "Memory fit, batching efficiency, tokens per dollar, queue tolerance",
            "fr": "Adéquation mémoire, efficacité du batching, tokens par dollar, tolérance à la file d’attente",
            "id": "Kecocokan memori, efisiensi batching, token per dolar, toleransi antrean",
        },
        {
            "en": "L40S, A100, H100, H200, B200 depending on model size",
            "fr": "L40S, A100, H100, H200, B200 selon la taille du modèle",
            "id": "L40S, A100, H100, H200, B200 tergantung ukuran model",
        },
        ("l40s", "a100", "h100", "h200", "b200"),
        {
            "en": "Low utilization can erase cheaper GPU rates",
            "fr": "Une faible utilisation peut annuler l’avantage d’un tarif GPU plus bas",
            "id": "Pemanfaatan rendah dapat meniadakan tarif GPU yang lebih murah",
        },
        NEED_COST_PER_OUTPUT,
    ),
    QuickAnswer(
        "realtime_llm",
        {"en": "Real-time LLM inference", "fr": "Inférence LLM en temps réel", "id": "Inferensi LLM waktu nyata"},
        {
            "en": "p95/p99 latency, KV cache capacity, streaming stability, serving framework support",
            "fr": "Latence p95/p99, capacité du cache KV, stabilité du streaming, prise en charge du framework de "
            "service",
            "id": "Latensi p95/p99, kapasitas cache KV, stabilitas streaming, dukungan framework penyajian",
        },
        {
            "en": "H100/H200/B200 for large or long-context models; L40S/A100 for smaller models",
            "fr": "H100/H200/B200 pour les grands modèles ou à long contexte ; L40S/A100 pour les modèles plus petits",
            "id": "H100/H200/B200 untuk model besar atau model dengan konteks panjang; L40S/A100 untuk model yang "
            "lebih kecil",
        },
        ("h100", "h200", "b200", "l40s", "a100"),
        {
            "en": "Tail latency and retries matter more than peak tokens/sec",
            "fr": "La latence de queue et les reprises comptent plus que le pic de tokens/s",
            "id": "Latensi ekor dan percobaan ulang lebih penting daripada puncak token/detik",
        },
        NEED_TAIL_LATENCY,
    ),
    QuickAnswer(
        "embedding",
        {"en": "Embeddings and reranking", "fr": "Embeddings et reranking", "id": "Embedding dan reranking"},
        {
            "en": "Throughput per dollar, CPU/GPU balance, batch size, serving simplicity",
            "fr": "Débit par dollar, équilibre CPU/GPU, taille de lot, simplicité du service",
            "id": "Throughput per dolar, keseimbangan CPU/GPU, ukuran batch, kesederhanaan layanan",
        },
        {
            "en": "L40S, A100, smaller cloud GPUs, sometimes CPU for low volume",
            "fr": "L40S, A100, petits GPU cloud, parfois le CPU pour les faibles volumes",
            "id": "L40S, A100, GPU cloud yang lebih kecil, terkadang CPU pada volume rendah",
        },
        ("l40s", "a100"),
        {
            "en": "Overprovisioned GPUs are common at low traffic",
            "fr": "Les GPU surdimensionnés sont fréquents à faible trafic",
            "id": "GPU yang berlebihan sangat umum terjadi pada lalu lintas rendah",
        },
        NEED_COST_PER_OUTPUT,
    ),
    QuickAnswer(
        "media",
        {
            "en": "Image and video generation",
            "fr": "Génération d’images et de vidéos",
            "id": "Pembuatan gambar dan video",
        },
        {
            "en": "VRAM, media kernels, storage bandwidth, queue tolerance",
            "fr": "VRAM, kernels médias, bande passante de stockage, tolérance à la file d’attente",
            "id": "VRAM, kernel media, bandwidth penyimpanan, toleransi antrean",
        },
        {
            "en": "L40S, H100/H200/B200 for heavier pipelines, RTX-class local workstations for creators",
            "fr": "L40S, H100/H200/B200 pour les pipelines plus lourds, stations locales de classe RTX pour les "
            "créateurs",
            "id": "L40S, H100/H200/B200 untuk pipeline yang lebih berat, workstation lokal kelas RTX untuk kreator",
        },
        ("l40s", "h100", "h200", "b200", "rtx"),
        {
            "en": "Final cost per accepted image/clip matters more than raw render speed",
            "fr": "Le coût final par image/clip accepté compte plus que la vitesse de rendu brute",
            "id": "Biaya akhir per gambar/klip yang diterima lebih penting daripada kecepatan render mentah",
        },
        NEED_COST_PER_OUTPUT,
    ),
    QuickAnswer(
        "evaluation",
        {
            "en": "Evaluation and synthetic data",
            "fr": "Évaluation et données synthétiques",
            "id": "Evaluasi dan data sintetis",
        },
        {
            "en": "Burst capacity, cost control, model diversity",
            "fr": "Capacité en rafale, maîtrise des coûts, diversité des modèles",
            "id": "Kapasitas puncak, pengendalian biaya, keragaman model",
        },
        {
            "en": "Spot/marketplace GPUs, batch APIs, or model/API routes",
            "fr": "GPU spot/marketplace, API par lots ou routes modèle/API",
            "id": "GPU spot/marketplace, API batch, atau jalur melalui model/API",
        },
        (),
        {
            "en": "Avoid owning idle capacity for infrequent bursts",
            "fr": "Évitez de posséder une capacité inactive pour des rafales peu fréquentes",
            "id": "Hindari memiliki kapasitas menganggur demi lonjakan yang jarang terjadi",
        },
        NEED_COST_PER_OUTPUT,
    ),
    # Notebooks are not a row of the matrix; the cheat sheet's RTX row ("local experimentation … prototyping, small
    # models") and the adapter-tuning row's smaller GPUs give their direction.
    QuickAnswer(
        "notebook",
        {"en": "Developer notebooks", "fr": "Notebooks de développement", "id": "Notebook pengembang"},
        {
            "en": "Fit for small models, fast iteration, low idle cost",
            "fr": "Adéquation pour de petits modèles, itération rapide, faible coût d’inactivité",
            "id": "Muat untuk model kecil, iterasi cepat, biaya menganggur rendah",
        },
        {
            "en": "RTX-class local GPUs for prototyping and small models; L40S or A100 when a notebook outgrows them",
            "fr": "GPU locaux de classe RTX pour le prototypage et les petits modèles ; L40S ou A100 quand un "
            "notebook les dépasse",
            "id": "GPU lokal kelas RTX untuk prototipe dan model kecil; L40S atau A100 ketika notebook "
            "membutuhkan lebih",
        },
        ("rtx", "l40s", "a100"),
        {
            "en": "A notebook GPU is not a production cluster; idle hours dominate its cost",
            "fr": "Un GPU de notebook n’est pas un cluster de production ; les heures inactives dominent son coût",
            "id": "GPU notebook bukan klaster produksi; jam menganggur mendominasi biayanya",
        },
        NEED_COST_PER_OUTPUT,
    ),
)
QUICK_ANSWERS_BY_CODE: Mapping[str, QuickAnswer] = MappingProxyType({row.code: row for row in QUICK_ANSWERS})

QUICK_ANSWER_FOR_TYPE: Mapping[str, str] = MappingProxyType(
    {
        TRAINING: "pretraining",
        FULL_FINE_TUNING: "full_fine_tuning",
        LORA_FINE_TUNING: "lora",
        BATCH_INFERENCE: "batch_llm",
        REALTIME_INFERENCE: "realtime_llm",
        EMBEDDING: "embedding",
        IMAGE_GENERATION: "media",
        VIDEO_GENERATION: "media",
        EVALUATION: "evaluation",
        NOTEBOOK: "notebook",
    }
)


# --------------------------------------------------------------------------------------------------------------------
# Rent, reserve, buy or use a model API
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapacityRule:
    """One row of the guide's rent/reserve/buy/API table. It applies when any one of `conditions` holds; a condition
    maps field names to the values that satisfy it (all fields must match; "tools" matches when any listed tool is
    used)."""

    code: str
    situation: Texts
    starting_point: Texts
    conditions: tuple[Mapping[str, tuple[str, ...]], ...]


CAPACITY_RULES: tuple[CapacityRule, ...] = (
    CapacityRule(
        "uncertain_demand",
        {
            "en": "Uncertain demand, changing models, or prototype",
            "fr": "Demande incertaine, modèles changeants ou prototype",
            "id": "Permintaan tidak pasti, model yang berubah, atau prototipe",
        },
        {
            "en": "Model API or short-term rental",
            "fr": "API de modèle ou location de courte durée",
            "id": "API model atau sewa jangka pendek",
        },
        (
            {"model_change_cadence": ("monthly",)},
            {"operating_mode": ("experiment", "notebook")},
            {"workload_type": (NOTEBOOK,)},
        ),
    ),
    CapacityRule(
        "irregular_experiments",
        {
            "en": "Irregular experiments and eval jobs",
            "fr": "Expériences irrégulières et jobs d’évaluation",
            "id": "Eksperimen tidak teratur dan tugas evaluasi",
        },
        {
            "en": "Spot/marketplace GPUs or batch model API",
            "fr": "GPU spot/marketplace ou API de modèle par lots",
            "id": "GPU spot/marketplace atau API model batch",
        },
        (
            {"workload_type": (EVALUATION,)},
            {"operating_mode": ("seasonal_burst",)},
            {"operating_mode": ("experiment",), "workload_type": tuple(TRAINS)},
        ),
    ),
    CapacityRule(
        "steady_inference",
        {
            "en": "Steady high-load inference on one model",
            "fr": "Inférence stable à forte charge sur un seul modèle",
            "id": "Inferensi stabil dengan beban tinggi pada satu model",
        },
        {
            "en": "Reserved GPUs, dedicated endpoints, or reserved clusters",
            "fr": "GPU réservés, endpoints dédiés ou clusters réservés",
            "id": "GPU terpesan, endpoint khusus, atau klaster terpesan",
        },
        (
            {
                "operating_mode": ("always_on",),
                "workload_type": (BATCH_INFERENCE, REALTIME_INFERENCE, EMBEDDING, IMAGE_GENERATION, VIDEO_GENERATION),
                "model_change_cadence": ("stable", "yearly"),
            },
        ),
    ),
    CapacityRule(
        "multi_node_training",
        {
            "en": "Multi-node training with topology requirements",
            "fr": "Entraînement multi-nœuds avec des exigences de topologie",
            "id": "Pelatihan multinode dengan persyaratan topologi",
        },
        {
            "en": "Dedicated training cluster or reserved high-speed fabric",
            "fr": "Cluster d’entraînement dédié ou tissu haut débit réservé",
            "id": "Klaster pelatihan khusus atau fabric berkecepatan tinggi yang dipesan",
        },
        ({"workload_type": (TRAINING,)}, {"workload_type": (FULL_FINE_TUNING,), "tools": ("slurm", "ray")}),
    ),
    CapacityRule(
        "private_hardware",
        {
            "en": "Strict network isolation or private hardware",
            "fr": "Isolation réseau stricte ou matériel privé",
            "id": "Isolasi jaringan atau perangkat keras privat yang ketat",
        },
        {
            "en": "Private GPU cloud or dedicated cluster",
            "fr": "Cloud GPU privé ou cluster dédié",
            "id": "Cloud GPU privat atau klaster khusus",
        },
        ({"operating_boundary": ("private_network", "dedicated_cluster", "on_prem", "data_residency")},),
    ),
    CapacityRule(
        "managed_models",
        {
            "en": "Need many official models, one balance, and fallback",
            "fr": "Besoin de nombreux modèles officiels, d’un solde unique et d’un repli",
            "id": "Membutuhkan banyak model resmi, satu saldo, dan opsi cadangan",
        },
        {
            "en": "Managed model/API route",
            "fr": "Route modèle/API gérée",
            "id": "Rute model/API yang dikelola",
        },
        ({"operating_boundary": ("managed_api",)}, {"tools": ("provider_endpoint",)}),
    ),
)


def capacity_rule_matches(rule: CapacityRule, values: Mapping[str, object]) -> bool:
    """True when one of the rule's conditions holds for these field values (tools: a list of tool codes)."""

    def field_matches(name: str, accepted: tuple[str, ...]) -> bool:
        value = values.get(name)
        if name == "tools":
            return bool(set(value or ()) & set(accepted))  # type: ignore[arg-type]
        return value in accepted

    return any(
        all(field_matches(name, accepted) for name, accepted in condition.items()) for condition in rule.conditions
    )


def capacity_hints(values: Mapping[str, object]) -> tuple[CapacityRule, ...]:
    """The rows of the rent/reserve/buy/API table that apply, in the guide's order."""
    return tuple(rule for rule in CAPACITY_RULES if capacity_rule_matches(rule, values))


# The fields the capacity table reads (so a page can say which are still empty when no row applies).
CAPACITY_FIELDS = ("workload_type", "operating_mode", "operating_boundary", "model_change_cadence", "tools")
