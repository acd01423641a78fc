# ruff: noqa  (a PyTorch program kept as its authors wrote it: tests/programs/README.md)
# "NLP From Scratch: Translation with a Sequence to Sequence Network and Attention" at toy
# sizes on a made-up vocabulary: EncoderRNN (Embedding, Dropout, GRU batch_first),
# BahdanauAttention (Wa/Ua/Va, torch.bmm context), AttnDecoderRNN with teacher forcing and
# topk(1) greedy decoding (squeeze(-1).detach()), torch.cat of the step outputs,
# F.log_softmax, NLLLoss on view(-1), two Adam optimizers, and an evaluate() that reads
# decoded ids with .item() and the attention weights.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

torch.manual_seed(0)
SOS_token, EOS_token = 0, 1
MAX_LENGTH = 6
input_size, output_size, hidden_size, batch_size = 12, 10, 16, 4


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size

        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super(BahdanauAttention, self).__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)

        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)

        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super(AttnDecoderRNN, self).__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs
            )
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                # Teacher forcing: Feed the target as the next input
                decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
            else:
                # Without teacher forcing: use its own predictions as the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()  # detach from history as input

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)

        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))

        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)

        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)

        return output, hidden, attn_weights


def train_epoch(dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion):
    total_loss = 0
    for data in dataloader:
        input_tensor, target_tensor = data

        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)

        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
        loss.backward()

        encoder_optimizer.step()
        decoder_optimizer.step()

        total_loss += loss.item()

    return total_loss / len(dataloader)


# Pairs of "sentences": random ids ending in EOS, padded with zeros to MAX_LENGTH.
n_pairs = 8
input_ids = torch.randint(2, input_size, (n_pairs, MAX_LENGTH))
target_ids = torch.randint(2, output_size, (n_pairs, MAX_LENGTH))
lengths = torch.randint(2, MAX_LENGTH, (n_pairs,))
for idx in range(n_pairs):
    n = int(lengths[idx])
    input_ids[idx, n:] = 0
    input_ids[idx, n - 1] = EOS_token
    target_ids[idx, n:] = 0
    target_ids[idx, n - 1] = EOS_token
train_data = torch.utils.data.TensorDataset(input_ids, target_ids)
train_dataloader = torch.utils.data.DataLoader(train_data, batch_size=batch_size)

encoder = EncoderRNN(input_size, hidden_size, dropout_p=0.0)
decoder = AttnDecoderRNN(hidden_size, output_size, dropout_p=0.0)
encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.01)
decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.01)
criterion = nn.NLLLoss()

for epoch in range(1, 6):
    loss = train_epoch(
        train_dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion
    )
    print(f"epoch {epoch} loss {loss:.4f}")


def evaluate(encoder, decoder, input_tensor):
    with torch.no_grad():
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)

        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()

        decoded_words = []
        for idx in decoded_ids:
            if idx.item() == EOS_token:
                decoded_words.append("<EOS>")
                break
            decoded_words.append(f"w{idx.item()}")
    return decoded_words, decoder_attn


encoder.eval()
decoder.eval()
for i in range(3):
    words, attentions = evaluate(encoder, decoder, input_ids[i : i + 1])
    print("<", " ".join(f"w{t}" for t in input_ids[i].tolist()))
    print("=", " ".join(f"w{t}" for t in target_ids[i].tolist()))
    print(">", " ".join(words), tuple(attentions.shape), f"{attentions.sum().item():.4f}")
