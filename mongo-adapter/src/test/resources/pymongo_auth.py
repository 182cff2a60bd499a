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

# Roles: read may read and not write; readWrite may write its own database only; a user
# without userAdmin may not create users. Each refusal is error 13.
with client(username=user, password=password, authSource="admin") as c:
    c["pyauth"].command("createUser", "ro", pwd="ro-pw", roles=["read"])
    c["pyauth"].command("createUser", "rw", pwd="rw-pw", roles=["readWrite"])
    try:
        c["pyauth"].command("createUser", "bad", pwd="x", roles=["noSuchRole"])
        raise AssertionError("an unknown role was accepted")
    except OperationFailure as e:
        assert e.code == 31, e.details


def refused(attempt):
    try:
        attempt()
    except OperationFailure as e:
        assert e.code == 13, e.details
        return
    raise AssertionError("an unauthorized command ran")


with client(username="ro", password="ro-pw", authSource="pyauth") as c:
    assert c["pyauth"]["c"].find_one() is not None
    assert c["pyauth"]["c"].count_documents({}) >= 1
    refused(lambda: c["pyauth"]["c"].insert_one({"ro": 1}))
    refused(lambda: c["pyauth"]["c"].update_many({}, {"$set": {"ro": 1}}))
    refused(lambda: c["pyauth"]["c"].create_index("ro"))
    refused(lambda: c["pyauth"].command("createUser", "x", pwd="x", roles=["read"]))
    refused(lambda: c["elsewhere"]["c"].find_one())
with client(username="rw", password="rw-pw", authSource="pyauth") as c:
    c["pyauth"]["c"].insert_one({"rw": 1})
    assert c["pyauth"]["c"].delete_many({"rw": 1}).deleted_count == 1
    refused(lambda: c["elsewhere"]["c"].insert_one({"rw": 1}))
    refused(lambda: c.drop_database("pyauth"))
with client(username=user, password=password, authSource="admin") as c:
    c["pyauth"].command("dropUser", "ro")
    c["pyauth"].command("dropUser", "rw")

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
