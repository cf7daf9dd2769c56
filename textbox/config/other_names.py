"""Other tools' names for our keys (HF Seq2SeqTrainingArguments, fairseq-train): the did-you-mean of an
unknown key typed by habit (``--lr``, ``--num_train_epochs``, ``--output_dir``). Only suggested, never
translated: a run's config.yaml keeps one name per setting. The value is our key, then an optional note
(textbox.utils.suggest.suggest's ``aliases``).
"""
from __future__ import annotations

KEY_ALIASES: dict[str, str] = {
    # Hugging Face Trainer / Seq2SeqTrainer
    "lr": "learning_rate",
    "num_train_epochs": "epochs",
    "output_dir": "saved_dir (with filename: the run directory is saved_dir/filename)",
    "run_name": "filename (the run directory is saved_dir/filename)",
    "per_device_train_batch_size": "train_batch_size",
    "per_device_eval_batch_size": "eval_batch_size",
    "gradient_accumulation_steps": "accumulation_steps",
    "max_grad_norm": "grad_clip",
    "lr_scheduler_type": "scheduler",
    "optim": "optimizer",
    "eval_strategy": "valid_strategy",
    "evaluation_strategy": "valid_strategy",
    "eval_steps": "valid_steps",
    "metric_for_best_model": "metrics_for_best_model",
    "save_total_limit": "max_save",
    "label_smoothing_factor": "label_smoothing",
    "model_name_or_path": "model_path",
    "tokenizer_name": "tokenizer_path",
    "max_source_length": "src_len",
    "max_target_length": "tgt_len",
    "generation_max_length": "generation_kwargs ({'max_new_tokens': N}; tgt_len by default)",
    "generation_num_beams": "generation_kwargs ({'num_beams': N})",
    "num_beams": "generation_kwargs ({'num_beams': N})",
    "max_new_tokens": "generation_kwargs ({'max_new_tokens': N})",
    "fp16": "mixed_precision (--mixed_precision=fp16)",
    "bf16": "mixed_precision (--mixed_precision=bf16)",
    "report_to": "tracker",
    "do_eval": "do_valid",
    "do_predict": "do_test",
    "resume_from_checkpoint": "resume",
    "hub_private_repo": "hub_private",
    "hub_repo_id": "hub_model_id",
    "early_stopping_patience": "stopping_steps",
    "max_train_samples": "quick_test",
    # fairseq-train
    "max_epoch": "epochs",
    "max_update": "max_steps",
    "save_dir": "saved_dir",
    "batch_size": "train_batch_size",
    "clip_norm": "grad_clip",
    "lr_scheduler": "scheduler",
    "warmup_updates": "warmup_steps",
    "update_freq": "accumulation_steps",
    "patience": "stopping_steps",
    "beam": "generation_kwargs ({'num_beams': N})",
    "max_source_positions": "src_len",
    "max_target_positions": "tgt_len",
    "source_lang": "src_lang",
    "target_lang": "tgt_lang",
}
