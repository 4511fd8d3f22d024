"""Text classification with Hugging Face ``Trainer``: a tiny BERT built from a config (nothing is
downloaded), a tokenised in-memory dataset, settings in ``TrainingArguments``.

    python hf_trainer.py [--workers 2] [--max-steps 200] [--output-dir DIR]
"""

import argparse
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class RandomTextDataset(Dataset):
    """Token ids and labels, as a tokenised text dataset hands them to the Trainer."""

    def __init__(self, size: int = 4096, seq_len: int = 64, vocab: int = 1000):
        generator = torch.Generator().manual_seed(0)
        self.input_ids = torch.randint(5, vocab, (size, seq_len), generator=generator)
        self.labels = torch.randint(0, 2, (size,), generator=generator)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        ids = self.input_ids[index]
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": self.labels[index]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--output-dir", default=None)
    args = parser.parse_args()
    config = BertConfig(
        vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
        max_position_embeddings=128, num_labels=2,
    )  # fmt: skip
    model = BertForSequenceClassification(config)
    with tempfile.TemporaryDirectory() as scratch:
        training_args = TrainingArguments(
            output_dir=args.output_dir or scratch,
            per_device_train_batch_size=32,
            max_steps=args.max_steps,
            learning_rate=5e-4,
            dataloader_num_workers=args.workers,
            report_to=[],
            save_strategy="no",
            logging_strategy="no",
            disable_tqdm=True,
            use_cpu=True,
        )
        trainer = Trainer(model=model, args=training_args, train_dataset=RandomTextDataset())
        trainer.train()


if __name__ == "__main__":
    main()
