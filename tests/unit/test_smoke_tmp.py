def test_root(client):
    resp = client.get('/', version=None)
    assert resp.json['versions'][0]['max_version'] == '1.39'
