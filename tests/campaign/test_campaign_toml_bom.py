"""A campaign.toml saved with a byte order mark (as Windows editors do) reads as the same file without one,
as the JSON and CSV readers read theirs."""

from calibrate import init_campaign, load_campaign
from calibrate.campaign.config import read_toml


def test_a_campaign_toml_with_a_byte_order_mark_is_read(tmp_path):
    folder = tmp_path / "c"
    init_campaign(folder, ["faithfulness"])
    toml = folder / "campaign.toml"
    plain = read_toml(toml)
    toml.write_bytes(b"\xef\xbb\xbf" + toml.read_bytes())  # before: "not valid TOML: Invalid statement (at line 1,
    assert read_toml(toml) == plain  # column 1)"
    assert list(load_campaign(folder).metrics) == ["faithfulness"]
