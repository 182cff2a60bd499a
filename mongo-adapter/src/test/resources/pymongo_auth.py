"""pymongo, unmodified, against a Parallax MongoDB server with --auth: run by PymongoClientTest.

Usage: python pymongo_auth.py HOST PORT USER PASSWORD   (USER is a user of the admin database)
"""
import sys

import pymongo
from pymongo.errors import OperationFailure

host, port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


def client(**kwargs):
    return pymongo.MongoClient(host, port, serverSelectionTimeoutMS=10000, **kwargs)


# The right password, mechanism negotiated (saslSupportedMechs) and named.
for mechanism in (None, "SCRAM-SHA-256"):
    options = {"authMechanism": mechanism} if mechanism else {}
    with client(username=user, password=password, authSource="admin", **options) as c:
        c["pyauth"]["c"].insert_one({"mechanism": str(mechanism)})
        assert c["pyauth"]["c"].count_documents({}) >= 1
        c["pyauth"].command("createUser", "app", pwd="app-pw", roles=["readWrite"])
        assert c["pyauth"].command("usersInfo", "app")["users"][0]["user"] == "app"
        c["pyauth"].command("dropUser", "app")

# A wrong password and an unknown user: error 18.
for name, pw in ((user, password + "x"), ("nobody", password)):
    with client(username=name, password=pw, authSource="admin",
                authMechanism="SCRAM-SHA-256") as c:
        try:
            c["pyauth"]["c"].find_one()
            raise AssertionError("logged in as %s with a wrong password" % name)
        except OperationFailure as e:
            assert e.code == 18, e.details

# No credentials: every command but the handshake is refused with error 13.
with client() as c:
    assert c.admin.command("ping")["ok"] == 1
    for attempt in (lambda: c["pyauth"]["c"].find_one(),
                    lambda: c["pyauth"]["c"].insert_one({"x": 1}),
                    lambda: c.list_database_names()):
        try:
            attempt()
            raise AssertionError("an unauthenticated command ran")
        except OperationFailure as e:
            assert e.code == 13, e.details

print("pymongo %s auth OK" % pymongo.version)
