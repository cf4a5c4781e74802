"""The scikit-learn reference point: TF-IDF + logistic regression on the same split.

    python projects/sentiment-classifier/baseline_sklearn.py        # needs scikit-learn

Trained on the whole 2,400-sentence pool and scored once on the 600 test sentences:

* ``default``: ``TfidfVectorizer()`` (word unigrams) + ``LogisticRegression()`` (C=1) — the
  textbook baseline;
* ``tuned``: word 1-2-grams + char_wb 2-5-grams (sublinear tf), C chosen by 5-fold stratified
  cross-validation on the 2,400 (never on the test set).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Small matrices: one BLAS thread is fastest, and on a busy machine OpenBLAS's spinning worker
# threads make each small matmul 10-300x slower. Set before numpy loads; override from the shell.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import accuracy_score, f1_score  # noqa: E402
from sklearn.model_selection import StratifiedKFold, cross_val_score  # noqa: E402
from sklearn.pipeline import FeatureUnion, make_pipeline  # noqa: E402

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from data import load_split  # noqa: E402


def main() -> int:
    split = load_split(0.0)  # the whole 2,400 pool for training
    x_tr, y_tr = [s.text for s in split.train], np.array([s.label for s in split.train])
    x_te, y_te = [s.text for s in split.test], np.array([s.label for s in split.test])

    def feats():
        return FeatureUnion(
            [
                ("w", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)),
                ("c", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True)),
            ]
        )

    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    scores = {
        c: cross_val_score(
            make_pipeline(feats(), LogisticRegression(C=c, max_iter=3000)), x_tr, y_tr, cv=cv
        ).mean()
        for c in (0.3, 1, 3, 10, 30)
    }
    best_c = max(scores, key=scores.get)
    runs = {
        "default": make_pipeline(TfidfVectorizer(), LogisticRegression()),
        f"tuned (C={best_c} by 5-fold CV)": make_pipeline(
            feats(), LogisticRegression(C=best_c, max_iter=3000)
        ),
    }
    print(
        "5-fold CV accuracy on the 2,400 by C:", {c: round(float(v), 4) for c, v in scores.items()}
    )
    for name, pipe in runs.items():
        pred = pipe.fit(x_tr, y_tr).predict(x_te)
        print(
            f"TF-IDF + LR {name:28s} test accuracy {accuracy_score(y_te, pred):.4f}  F1 {f1_score(y_te, pred):.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
