"""
=====================================================================
Log-linear analysis of a contingency table: hair, eye colour and sex
=====================================================================

A log-linear model of a contingency table is a discrete Markov random field
whose cliques are the table's interaction terms, and its maximum-likelihood
fit is what :class:`skmrf.ExactMaxLikelihood` computes. This example
repeats the classic analysis of R's ``HairEyeColor`` table (592 statistics
students by hair colour, eye colour and sex) with the statistics of the fit:
the deviance ``G^2`` against the saturated model, AIC, BIC, a
likelihood-ratio test (:func:`skmrf.metrics.likelihood_ratio_test`) and
standard errors. R's figures (``MASS::loglm`` and ``glm``, R 4.2, MASS 7.3)
are printed beside ours.
"""

# %%
# The table, one row per cell
# ---------------------------
# The 32 counts in the order of R's ``as.data.frame(HairEyeColor)``: hair
# varies fastest, then eye, then sex. Each variable is coded by the position
# of its level, so state 0 is R's first level (Black, Brown, Male). A table
# is fed as one row per cell with the count as ``sample_weight``: a row of
# weight ``w`` counts as ``w`` identical rows.
import os
import warnings

import numpy as np
from scipy.stats import chi2

from skmrf import ExactMaxLikelihood
from skmrf.metrics import likelihood_ratio_test

HAIR = ["Black", "Brown", "Red", "Blond"]
EYE = ["Brown", "Blue", "Hazel", "Green"]
SEX = ["Male", "Female"]
freq = np.array([32, 53, 10, 3, 11, 50, 10, 30, 10, 25, 7, 5, 3, 15, 7, 8,
                 36, 66, 16, 4, 9, 34, 7, 64, 5, 29, 7, 5, 2, 14, 7, 8], dtype=float)  # fmt: skip
sex, eye, hair = np.indices((len(SEX), len(EYE), len(HAIR))).reshape(3, -1)  # hair fastest
X = np.column_stack([hair, eye, sex])  # columns 0 = Hair, 1 = Eye, 2 = Sex
n_cells, N = len(freq), freq.sum()
print(f"{n_cells} cells, {N:.0f} students")

# %%
# Maximum likelihood, not the default ridge
# -----------------------------------------
# The default ``alpha="auto"`` adds a small ridge penalty (it keeps parameters
# finite when a state or combination is never observed), so its fit is not the
# maximum-likelihood one and every statistic below warns about it; a
# log-linear analysis needs ``alpha=0``. ``tol`` bounds the largest gradient
# component of the mean log-likelihood: ``1e-10`` gives the parameters to
# about ten digits, enough to compare with R's.
penalised = ExactMaxLikelihood([(0, 1), (0, 2)]).fit(X, sample_weight=freq)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    penalised.deviance(X, freq)
print(f"{caught[0].category.__name__}: {caught[0].message}")

# %%
# A sequence of models
# --------------------
# A model is given by its generating cliques: ``[(0, 1), (0, 2)]`` is
# ``[HE][HS]`` (hair-eye and hair-sex interactions, eye and sex independent
# given hair), and ``[(0, 1, 2)]`` is the saturated model. The residual
# degrees of freedom are the cells minus one (the total is fixed) minus the
# free parameters ``n_params_``.
#
# AIC and BIC are those of the multinomial likelihood of the 592 students
# (BIC with ``n = 592``). R's ``glm`` fits the counts with a Poisson
# likelihood, which differs from the multinomial one by a constant of the
# data, and counts the total as one more parameter: its AIC differs from ours
# by the same constant for every model, so differences between models agree.
# The same holds for BIC against R's ``AIC(glm, k = log(592))`` (``BIC(glm)``
# itself would take ``n`` to be the 32 cells).
models = {
    "[H][E][S]": [(0,), (1,), (2,)],
    "[HE][S]": [(0, 1), (2,)],
    "[HE][HS]": [(0, 1), (0, 2)],
    "[HE][ES]": [(0, 1), (1, 2)],
    "[HE][HS][ES]": [(0, 1), (0, 2), (1, 2)],
    "[HES]": [(0, 1, 2)],
}
# R: m <- loglm(f, data = HairEyeColor, eps = 1e-12, iter = 1000); c(m$lrt, m$df,
# pchisq(m$lrt, m$df, lower.tail = FALSE)), and g <- glm(update(f, Freq ~ .), family = poisson,
# data = as.data.frame(HairEyeColor)); c(AIC(g), AIC(g, k = log(592))), for f in ~ Hair + Eye + Sex,
# ~ Hair*Eye + Sex, ~ Hair*Eye + Hair*Sex, ~ Hair*Eye + Eye*Sex, ~ Hair*Eye + Hair*Sex + Eye*Sex,
# ~ Hair*Eye*Sex. (loglm's default eps = 0.1 stops its iterative proportional fitting of
# [HE][HS][ES], the one model without closed-form estimates, at G^2 = 6.761258; glm gives 6.761250.)
R = {  # G^2, df, p-value, glm AIC, glm AIC with k = log(592)
    "[H][E][S]": (166.300139500487, 24, 2.92720793232e-23, 321.178867099, 356.246920178),
    "[HE][S]": (19.856561035971, 15, 0.177504511786, 192.735288635, 267.254901428),
    "[HE][HS]": (11.763722868927, 12, 0.464837193374, 190.642450468, 278.312583165),
    "[HE][ES]": (18.327149611409, 12, 0.106112183936, 197.205877210, 284.876009908),
    "[HE][HS][ES]": (6.761250418772, 9, 0.6619608081, 191.639978017, 292.460630620),
    "[HES]": (0.0, 0, 1.0, 202.878727599, 343.150939915),
}

fits, rows = {}, []
for name, cliques in models.items():
    est = ExactMaxLikelihood(cliques, alpha=0, tol=1e-10).fit(X, sample_weight=freq)
    fits[name] = est
    g2, df = est.deviance(X, freq), int(np.prod(est.n_states_)) - 1 - est.n_params_
    p = chi2.sf(g2, df) if df > 0 else 1.0  # the saturated model fits exactly
    rows.append((name, est.n_params_, df, g2, p, est.aic(X, freq), est.bic(X, freq)))

print(f"{'model':<13} {'k':>3} {'df':>3} {'G^2':>11} {'G^2 (R)':>11} {'p-value':>12} {'p-value (R)':>12}")
for name, k, df, g2, p, _, _ in rows:
    r = R[name]
    assert df == r[1]
    print(f"{name:<13} {k:>3} {df:>3} {g2:>11.6f} {r[0]:>11.6f} {p:>12.6g} {r[2]:>12.6g}")

best_aic, best_bic = min(row[5] for row in rows), min(row[6] for row in rows)
print(f"\n{'model':<13} {'AIC':>10} {'dAIC':>8} {'AIC - R':>11} {'BIC':>10} {'dBIC':>8} {'BIC - R':>11}")
for name, _, _, _, _, aic, bic in rows:
    r = R[name]
    print(
        f"{name:<13} {aic:>10.3f} {aic - best_aic:>8.3f} {aic - r[3]:>11.6f} "
        f"{bic:>10.3f} {bic - best_bic:>8.3f} {bic - r[4]:>11.6f}"
    )

# %%
# The mutual independence model is far off (``G^2 = 166`` on 24 df). Once
# hair and eye colour interact, the question is whether sex depends on hair
# colour: AIC prefers ``[HE][HS]``, BIC (whose penalty ``log 592 = 6.4`` per
# parameter is heavier) the simpler ``[HE][S]``. The likelihood-ratio test of
# the two nested models is the difference of their deviances, on 3 df:
test = likelihood_ratio_test(fits["[HE][S]"], fits["[HE][HS]"], X, freq)
# R: anova(glm(Freq ~ Hair*Eye + Sex, ...), glm(Freq ~ Hair*Eye + Hair*Sex, ...), test = "Chisq")
print(f"[HE][S] against [HE][HS]: G^2 = {test.statistic:.9f} on {test.df} df, p = {test.pvalue:.9f}")
print(f"R's anova:                G^2 = {8.092838167044:.9f} on 3 df, p = {0.0441314845089:.9f}")

# %%
# Standard errors of the hair-sex interaction
# -------------------------------------------
# ``theta_`` holds one block per clique of ``model_.cliques``, each over the
# non-zero states of its variables: the model is normalised with respect to
# state 0, which is R's treatment contrasts with the first level as
# reference. So the hair-sex block of ``[HE][HS]`` holds R's coefficients
# ``HairBrown:SexFemale``, ``HairRed:SexFemale`` and ``HairBlond:SexFemale``.
# ``standard_errors`` returns one error per entry of ``theta_``, and
# ``model_.potential(clique, theta=...)`` reads any such vector by clique.
# (The Poisson and multinomial fits share every coefficient but R's intercept.)
chosen = fits["[HE][HS]"]
se = chosen.standard_errors(X, freq)
estimates = chosen.model_.potential((0, 2)).ravel()  # shape (3, 1): hair Brown, Red, Blond x sex Female
errors = chosen.model_.potential((0, 2), theta=se).ravel()
labels = [f"Hair{h}:Sex{SEX[1]}" for h in HAIR[1:]]
# R: summary(glm(Freq ~ Hair*Eye + Hair*Sex, family = poisson, data = as.data.frame(HairEyeColor)))
R_COEF = {  # Estimate, Std. Error
    "HairBrown:SexFemale": (0.0741079721537182, 0.225995406057248),
    "HairRed:SexFemale": (0.1586653601817813, 0.305821354032584),
    "HairBlond:SexFemale": (0.6399157303370611, 0.266782152494747),
}
print(f"{'':<20} {'estimate':>10} {'(R)':>10} {'std. error':>11} {'(R)':>10} {'z':>7}")
for label, b, s in zip(labels, estimates, errors):
    rb, rs = R_COEF[label]
    print(f"{label:<20} {b:>10.6f} {rb:>10.6f} {s:>11.6f} {rs:>10.6f} {b / s:>7.3f}")

# %%
# Only the odds of blond against black hair differ clearly between women and
# men (``z = 2.4``), hence the hair-sex term. The Pearson residuals
# ``(observed - fitted) / sqrt(fitted)`` of ``[HE][HS]``, where the fitted
# count of a cell is ``592 p(cell)`` (``score_samples`` is ``log p``), stay
# well inside +-2, as ``G^2 = 11.8`` on 12 df suggests. The largest are the
# brown-haired, blue-eyed students: more men and fewer women than fitted.
fitted = N * np.exp(chosen.score_samples(X))
residuals = ((freq - fitted) / np.sqrt(fitted)).reshape(len(SEX), len(EYE), len(HAIR))
print("largest |residual|:", f"{np.abs(residuals).max():.2f}")
try:
    import matplotlib.pyplot as plt
except ImportError:  # matplotlib is optional
    plt = None
if plt is not None:
    fig, axes = plt.subplots(1, 2, figsize=(7, 3.2), sharey=True)
    for k, ax in enumerate(axes):
        image = ax.imshow(residuals[k].T, cmap="RdBu_r", vmin=-2, vmax=2)
        ax.set(xticks=range(len(EYE)), xticklabels=EYE, yticks=range(len(HAIR)), yticklabels=HAIR)
        ax.set(xlabel="eye", title=SEX[k])
    axes[0].set_ylabel("hair")
    fig.colorbar(image, ax=axes, label="Pearson residual", shrink=0.8)
    fig.suptitle("Residuals of [HE][HS]")
    figures = os.environ.get("SKMRF_FIGURES", "figures")  # where the scripts save their figures
    os.makedirs(figures, exist_ok=True)
    fig.savefig(os.path.join(figures, "log_linear_residuals.png"))
