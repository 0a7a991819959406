"""A tiny, randomly initialised Llama with a self-contained tokenizer: real code paths, no download.

Used by tests (engine equality, padding invariance, resume) and by `make bench-gpu`'s CPU dry run.
The tokenizer is a byte-level BPE trained on a fixed corpus, so it is identical on every machine.
"""

from __future__ import annotations

from functools import lru_cache

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

_CORPUS = [
    "What is the capital of France? The capital of France is Paris.",
    "Please answer the question briefly. Thank you very much!",
    "Answer now. I do not have all day; just tell me.",
    "How many legs does a spider have? A spider has eight legs.",
    "Who wrote Hamlet? William Shakespeare wrote Hamlet.",
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
    "Is it true that bats are blind? No, bats can see.",
    "GIVE ME THE ANSWER!!! ... ;; -- ( ) [ ] : , ' extra   spaces   here",
]
# ChatML-style template so the chat-template code path is exercised exactly as for real instruct models.
_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]


@lru_cache(maxsize=1)
def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE (vocab 384) with pad/eos specials and a ChatML chat template."""
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=384,
        special_tokens=SPECIALS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(_CORPUS, trainer=trainer)
    tok = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=bpe, pad_token="<|pad|>", eos_token="<|im_end|>", bos_token=None, unk_token=None
    )
    tok.chat_template = _CHAT_TEMPLATE
    tok.padding_side = "left"
    return tok


def tiny_llama(seed: int = 0, *, layers: int = 2, hidden: int = 64) -> LlamaForCausalLM:
    """A randomly initialised Llama sized for unit tests (float32, eval mode, ~0.1 M parameters)."""
    tok = tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.eval()  # type: ignore[no-untyped-call]  # transformers' Module.eval is untyped
    return model
