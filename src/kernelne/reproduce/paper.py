"""The paper's reported numbers (docs/METHOD.md §13), printed beside kernelne's in every table.

Celikkanat & Malliaros, "Kernel Node Embeddings", GlobalSIP 2019: Table II (Micro-F1, node
classification, nine training ratios) and Table III (ROC-AUC, link prediction). Keys are the
method names of the reproduce config (``kernelne-gauss`` = "Gauss", ``kernelne-sch`` = "Sch").
The paper reports no Macro-F1 and nothing for the plain "NE" ablation.
"""

from __future__ import annotations

RATIOS = (0.02, 0.04, 0.06, 0.08, 0.1, 0.3, 0.5, 0.7, 0.9)

MICRO_F1: dict[str, dict[str, tuple[float, ...]]] = {
    "citeseer": {
        "deepwalk": (.416, .460, .489, .505, .517, .566, .584, .595, .592),
        "node2vec": (.450, .491, .517, .530, .541, .585, .597, .601, .599),
        "line": (.323, .387, .423, .451, .466, .532, .551, .560, .564),
        "hope": (.196, .205, .210, .204, .219, .256, .277, .299, .320),
        "netmf": (.451, .496, .526, .540, .552, .590, .603, .604, .608),
        "kernelne-gauss": (.479, .514, .535, .548, .560, .603, .615, .623, .630),
        "kernelne-sch": (.482, .519, .538, .552, .561, .599, .613, .620, .627),
    },
    "cora": {
        "deepwalk": (.621, .689, .715, .732, .747, .802, .819, .826, .833),
        "node2vec": (.656, .714, .743, .757, .769, .815, .831, .839, .841),
        "line": (.450, .544, .590, .633, .661, .746, .765, .774, .775),
        "hope": (.277, .302, .299, .302, .302, .301, .302, .303, .302),
        "netmf": (.636, .716, .748, .767, .773, .821, .834, .841, .844),
        "kernelne-gauss": (.706, .746, .761, .774, .782, .815, .830, .837, .842),
        "kernelne-sch": (.693, .733, .753, .761, .769, .799, .810, .819, .824),
    },
    "dblp": {
        "deepwalk": (.545, .585, .600, .608, .613, .626, .628, .628, .633),
        "node2vec": (.575, .600, .611, .619, .622, .636, .638, .639, .639),
        "line": (.554, .580, .590, .597, .603, .618, .621, .623, .623),
        "hope": (.379, .378, .379, .379, .379, .379, .379, .378, .380),
        "netmf": (.577, .589, .596, .601, .605, .617, .620, .623, .623),
        "kernelne-gauss": (.611, .621, .626, .628, .630, .637, .641, .642, .644),
        "kernelne-sch": (.610, .616, .622, .624, .625, .633, .636, .637, .638),
    },
}

_AUC_METHODS = ("deepwalk", "node2vec", "line", "hope", "netmf", "kernelne-gauss", "kernelne-sch")
_AUC_ROWS = {
    "citeseer": (.837, .762, .557, .756, .742, .886, .875),
    "cora": (.778, .724, .554, .728, .755, .819, .814),
    "dblp": (.944, .905, .590, .930, .930, .963, .958),
    "astroph": (.960, .935, .679, .967, .897, .978, .970),
    "hepth": (.897, .830, .633, .875, .882, .920, .915),
    "facebook": (.983, .988, .696, .980, .987, .987, .987),
    "gnutella": (.680, .498, .702, .599, .651, .766, .677),
}
ROC_AUC: dict[str, dict[str, float]] = {
    name: dict(zip(_AUC_METHODS, row, strict=True)) for name, row in _AUC_ROWS.items()
}


def paper_micro_f1(dataset: str, method: str, ratio: float) -> float | None:
    """The paper's Micro-F1 for this cell, or ``None`` when it reports none."""
    row = MICRO_F1.get(dataset, {}).get(method)
    for r, value in zip(RATIOS, row or (), strict=False):
        if abs(r - ratio) < 1e-9:
            return value
    return None


def paper_roc_auc(dataset: str, method: str) -> float | None:
    """The paper's link-prediction ROC-AUC for this cell, or ``None``."""
    return ROC_AUC.get(dataset, {}).get(method)
