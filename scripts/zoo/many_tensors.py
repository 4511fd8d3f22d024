"""Train a small sequence classifier on token sequences of varied length with their positions, 128
to a batch, kept as lists of tensors (padded in the training step), with four DataLoader workers.

Planted: every tensor a worker hands over travels as its own shared-memory file, and with torch's
default "file_descriptor" sharing strategy each one holds a file descriptor open in the training
process while it lives: 256 per batch, times the batches received and not yet freed. Under the common soft limit
of 1024 open files the script dies with "received 0 items of ancdata" (pytorch#973). The fix is one
tensor per batch (pad in the collate function), or the "file_system" sharing strategy.
    python many_tensors.py [--epochs N]
"""

import argparse

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset


class TokenSequences(Dataset):
    def __len__(self) -> int:
        return 8192

    def __getitem__(self, index: int):
        generator = torch.Generator().manual_seed(index)
        length = int(torch.randint(16, 64, (1,), generator=generator))
        tokens = torch.randint(0, 1000, (length,), generator=generator)
        return tokens, torch.arange(length), index % 2


def as_lists(samples):
    tokens, positions, labels = zip(*samples, strict=True)
    return list(tokens), list(positions), torch.tensor(labels)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(TokenSequences(), batch_size=128, shuffle=True, num_workers=4, collate_fn=as_lists)
    model = nn.Sequential(nn.EmbeddingBag(1000, 64), nn.Linear(64, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(args.epochs):
        for sequences, positions, labels in loader:
            padded = pad_sequence(sequences, batch_first=True) + 0 * pad_sequence(positions, batch_first=True)
            loss = nn.functional.cross_entropy(model(padded), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
