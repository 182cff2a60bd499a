"""pymongo, unmodified, against the Parallax MongoDB server: run by PymongoClientTest.

Usage: python pymongo_client.py mongodb://127.0.0.1:PORT
"""
import sys
import time

import pymongo
from pymongo import ASCENDING, DESCENDING, InsertOne, UpdateOne, DeleteOne, ReturnDocument
from pymongo.errors import BulkWriteError, DuplicateKeyError
from pymongo.write_concern import WriteConcern

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
db = client["pyapp"]
people = db["people"]

people.insert_many([{"_id": i, "name": "p%d" % i, "age": i % 40, "city": "c%d" % (i % 5)}
                    for i in range(200)])
assert people.count_documents({}) == 200
assert people.find_one({"_id": 7})["name"] == "p7"

people.create_index([("age", ASCENDING)])
people.create_index([("city", ASCENDING), ("age", DESCENDING)])
people.create_index("name", unique=True)
assert {ix["name"] for ix in people.list_indexes()} == {"_id_", "age_1", "city_1_age_-1", "name_1"}

try:
    people.insert_one({"name": "p3"})
    raise AssertionError("duplicate name accepted")
except DuplicateKeyError as e:
    assert e.code == 11000, e.code

plan = people.find({"city": "c2", "age": {"$gte": 30}}).explain()
scan = plan["queryPlanner"]["winningPlan"]["inputStage"]
assert scan["stage"] == "IXSCAN" and scan["indexName"] == "city_1_age_-1", plan
stats = plan["executionStats"]
assert stats["totalDocsExamined"] == stats["nReturned"], stats

top = list(people.find({"city": "c1"}).sort("age", DESCENDING).limit(3))
assert [d["age"] for d in top] == sorted((d["age"] for d in top), reverse=True)

res = people.update_many({"age": {"$lt": 5}}, {"$set": {"young": True}})
assert res.modified_count == 25, res.modified_count
up = people.update_one({"_id": 1000}, {"$set": {"name": "new"}}, upsert=True)
assert up.upserted_id == 1000
doc = people.find_one_and_update({"_id": 1}, {"$inc": {"age": 100}},
                                 return_document=ReturnDocument.AFTER)
assert doc["age"] == 101

try:
    people.bulk_write([InsertOne({"_id": 2000, "name": "b"}), UpdateOne({"_id": 2}, {"$set": {"x": 1}}),
                       DeleteOne({"_id": 3}), InsertOne({"_id": 2001, "name": "b"})], ordered=True)
    raise AssertionError("duplicate in bulk accepted")
except BulkWriteError as e:
    assert e.details["writeErrors"][0]["code"] == 11000
    assert e.details["nInserted"] == 1

groups = list(people.aggregate([{"$match": {"young": True}},
                                {"$group": {"_id": "$city", "n": {"$sum": 1}}},
                                {"$sort": {"_id": 1}}]))
assert sum(g["n"] for g in groups) == 24, groups  # 25 young, _id 3 deleted in the bulk

journaled = people.with_options(write_concern=WriteConcern(j=True))
journaled.insert_one({"_id": "durable", "name": "d"})

# w:0: sent with OP_MSG's moreToCome, no reply; the writes land, a failing one is silent.
unacknowledged = people.with_options(write_concern=WriteConcern(w=0))
assert not unacknowledged.insert_many([{"_id": "w0-%d" % i, "name": "w0-%d" % i}
                                       for i in range(50)]).acknowledged
unacknowledged.insert_one({"_id": "durable"})  # a duplicate: no error for w:0
deadline = time.time() + 10
while people.count_documents({"_id": {"$regex": "^w0-"}}) < 50 and time.time() < deadline:
    time.sleep(0.05)
assert people.count_documents({"_id": {"$regex": "^w0-"}}) == 50
assert people.find_one({"_id": "durable"})["name"] == "d"

# A large result over many getMores (the server streams it from one snapshot).
assert sum(1 for _ in people.find().batch_size(7)) == people.count_documents({})

# A streaming aggregation ($match, $sort over an index, $project, $skip, $limit) over getMores.
ages = [d["age"] for d in people.aggregate([{"$match": {"age": {"$gte": 10}}},
                                            {"$sort": {"age": 1}},
                                            {"$project": {"_id": 0, "age": 1}},
                                            {"$skip": 5}, {"$limit": 100}], batchSize=9)]
assert len(ages) == 100 and ages == sorted(ages) and ages[0] >= 10, ages

people.drop_index("age_1")
assert "age_1" not in {ix["name"] for ix in people.list_indexes()}
assert sorted(db.list_collection_names()) == ["people"]
valid = db.command("validate", "people")
assert valid["valid"], valid
people.drop()
assert db.list_collection_names() == []
db["other"].insert_one({"x": 1})
client.drop_database("pyapp")
assert "pyapp" not in client.list_database_names()
print("pymongo %s OK" % pymongo.version)
