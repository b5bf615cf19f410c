"""Quality of a real model's formats and engines: perplexity on a held-out Austen chapter and
greedy-token agreement with the fp32 torch reference: at every position of that chapter, whether
the format's most likely next token is fp32's (teacher-forced, as top-1 agreement of a
classifier; the free-running generation's agreement is reported beside it, not judged).

Only SmolLM2-135M-Instruct's real weights get figures; a random-weight model's are "n/a". A
format or engine below 99 % agreement, or whose perplexity rises more than 2 % over fp32, is
flagged, and the verdict leaves it out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

MIN_AGREEMENT = 0.99
MAX_PERPLEXITY_RISE = 0.02
WINDOW = 512  # tokens per perplexity window (no overlap)


# A window's scores: the summed negative log-likelihood of its tokens after the first, and the
# greedy next-token prediction at each position but its last
Scored = tuple[float, np.ndarray]


def score(model: Any, ids: list[int], window: int = WINDOW) -> tuple[float, np.ndarray]:
    """(perplexity, greedy next-token predictions) over consecutive windows of `ids`: each
    position's prediction sees the same real text before it, whatever the model. A torch model,
    or an engine's generator that scores windows with its own numbers (`score_windows`:
    llama.cpp's logits, OpenVINO GenAI's log probabilities and greedy tokens)."""
    chunks = [ids[start : start + window + 1] for start in range(0, len(ids) - 1, window)]
    chunks = [[int(t) for t in chunk] for chunk in chunks if len(chunk) >= 2]
    if hasattr(model, "score_windows"):
        scored = model.score_windows(chunks)
    else:
        scored = _torch_windows(model, chunks)
    total, count = sum(nll for nll, _ in scored), sum(len(chunk) - 1 for chunk in chunks)
    return math.exp(total / count), np.concatenate([predicted for _, predicted in scored])


def _torch_windows(model: Any, chunks: list[list[int]]) -> list[Scored]:
    """A torch model's Scored per window, from its logits."""
    import torch

    device, scored = next(model.parameters()).device, []
    with torch.inference_mode():
        for chunk in chunks:
            tokens = torch.tensor([chunk], device=device)
            logits = model(input_ids=tokens[:, :-1]).logits.float()[0]
            nll = torch.nn.functional.cross_entropy(logits, tokens[0, 1:], reduction="sum")
            scored.append((nll.item(), logits.argmax(-1).cpu().numpy()))
    return scored


def perplexity(model: Any, ids: list[int], window: int = WINDOW) -> float:
    """exp(mean next-token loss) over consecutive windows of `ids`."""
    return score(model, ids, window)[0]


def agreement(tokens: np.ndarray, reference: np.ndarray) -> float:
    """Share of positions whose greedy token equals the reference's."""
    if tokens.shape != reference.shape:
        raise ValueError(f"tokens {tokens.shape} and reference {reference.shape} differ in shape")
    return float((tokens == reference).mean())


def judge(agree: float | None, ppl: float | None, ppl_fp32: float | None) -> str | None:
    """Why a format or engine is left out of the verdict, or None."""
    if agree is not None and agree < MIN_AGREEMENT:
        return f"greedy agreement {agree:.3f} with fp32 is below {MIN_AGREEMENT}"
    if ppl is not None and ppl_fp32 and ppl > ppl_fp32 * (1 + MAX_PERPLEXITY_RISE):
        return f"perplexity {ppl:.3f} is over {MAX_PERPLEXITY_RISE:.0%} above fp32's {ppl_fp32:.3f}"
    return None


def quality_section(
    settings: dict[str, Any], model: Any | None, prompts: list[list[int]], tokens: np.ndarray
) -> dict[str, Any]:
    """The record's quality section of a generate cell (its model and its generated tokens)."""
    from devicebench.workloads import textgen_llm

    if settings["model"] not in textgen_llm.REAL_MODELS:
        return {"status": textgen_llm.RANDOM_WEIGHTS}
    from devicebench.engines.generative._torch_loop import TorchGreedy
    from devicebench.generation import corpus
    from devicebench.generation.settings import generate_settings

    name, how = settings["model"], generate_settings(settings)
    ids = textgen_llm.tokenizer(name)(
        corpus.held_out_text(how.get("corpus_dir") or corpus.DEBIAN_DIR)
    )
    ids = ids["input_ids"][: int(how.get("quality_tokens", 2 * WINDOW))]
    reference = textgen_llm.build_model(name, "cpu", "fp32", int(settings["seed"]))
    greedy = TorchGreedy(reference, "cpu", static=False, compile=False)
    length = tokens.shape[1]
    ref_tokens = np.array(greedy.decode(greedy.prefill(prompts, length), length, lambda _: None))
    ppl_fp32, predicted_fp32 = score(reference, ids)
    ppl, predicted = score(model, ids) if model is not None else (None, None)
    agree = agreement(predicted, predicted_fp32) if predicted is not None else None
    flag = judge(agree, ppl, ppl_fp32)
    section = {
        "greedy_agreement": agree,  # next-token argmax on the held-out chapter, as fp32's
        # the cell's own free-running tokens against fp32's on the same prompts: one early
        # difference changes every later position, so it is shown, not judged
        "generation_agreement": agreement(tokens, ref_tokens),
        "perplexity": ppl,
        "perplexity_fp32": ppl_fp32,
        "perplexity_tokens": len(ids),
        "corpus": f"{corpus.HELD_OUT[0]}, last chapter",
        "reference": "torch fp32 eager on the CPU",
        "flagged": flag,
    }
    if model is None:  # nothing scores the chapter: the gate cannot judge, and says so
        section["unverified"] = (
            "the engine gives no logits per position: only its free-running tokens' agreement "
            "with fp32 is shown, not judged"
        )
    return section
