// mongosh, unmodified, against the Parallax MongoDB server: run by MongoshClientTest.
function check(condition, message) {
  if (!condition) throw new Error("check failed: " + message);
}

const t = db.getSiblingDB("shell").items;
t.insertMany([{_id: 1, a: 1, tags: ["x"]}, {_id: 2, a: 2, tags: ["x", "y"]}, {_id: 3, a: 3}]);
t.createIndex({a: -1});
t.createIndex({tags: 1});
check(t.countDocuments({a: {$gte: 2}}) === 2, "count by range");
check(JSON.stringify(t.find({}, {_id: 1}).sort({a: -1}).toArray().map(d => d._id)) === "[3,2,1]", "sort");

const scan = t.find({tags: "y"}).explain().queryPlanner.winningPlan.inputStage;
check(scan.stage === "IXSCAN" && scan.indexName === "tags_1" && scan.isMultiKey, "multikey plan");

t.updateOne({_id: 1}, {$push: {tags: "z"}});
check(t.findOne({tags: "z"})._id === 1, "found through the updated index");
let code = 0;
try { t.insertOne({_id: 2}); } catch (e) { code = e.code; }
check(code === 11000, "duplicate _id is 11000, got " + code);

check(t.validate().valid, "validate");
check(JSON.stringify(t.getIndexes().map(i => i.name).sort()) === '["_id_","a_-1","tags_1"]', "indexes");
t.dropIndex("tags_1");
check(JSON.stringify(t.getIndexes().map(i => i.name).sort()) === '["_id_","a_-1"]', "dropIndex");
t.drop();

// Bulk writes, upserts, findAndModify, a unique index, aggregation, cursors over getMore.
const s = db.getSiblingDB("shell").sales;
const docs = [];
for (let i = 0; i < 500; i++) docs.push({_id: i, sku: "s" + i, region: "r" + (i % 4), qty: i % 10});
s.insertMany(docs);
s.createIndex({sku: 1}, {unique: true});
code = 0;
try { s.insertOne({sku: "s7"}); } catch (e) { code = e.code; }
check(code === 11000, "unique index violation is 11000, got " + code);
const bulk = s.bulkWrite([{insertOne: {document: {_id: 1000, sku: "new"}}},
                          {updateOne: {filter: {_id: 1}, update: {$set: {qty: 99}}}},
                          {deleteOne: {filter: {_id: 2}}},
                          {updateOne: {filter: {_id: 2000}, update: {$set: {sku: "up"}}, upsert: true}}]);
check(bulk.insertedCount === 1 && bulk.modifiedCount === 1 && bulk.deletedCount === 1
      && bulk.upsertedCount === 1, "bulkWrite " + JSON.stringify(bulk));
const after = s.findOneAndUpdate({_id: 3}, {$inc: {qty: 10}}, {returnDocument: "after"});
check(after.qty === 13, "findOneAndUpdate");
let n = 0;
s.find().batchSize(10).forEach(() => n++);
check(n === 501, "a cursor across getMores saw " + n);
const groups = s.aggregate([{$match: {qty: {$lt: 10}}}, {$group: {_id: "$region", n: {$sum: 1}}},
                            {$sort: {_id: 1}}, {$project: {_id: 1, n: 1}}, {$limit: 2}]).toArray();
check(groups.length === 2 && groups[0]._id === "r0" && groups[0].n === 125, "aggregate " + JSON.stringify(groups));
check(s.countDocuments({region: "r1"}) === 125, "countDocuments");
check(JSON.stringify(db.getSiblingDB("shell").getCollectionNames()) === '["sales"]', "listCollections");
check(db.getSiblingDB("shell").dropDatabase().ok === 1, "dropDatabase");
check(db.getSiblingDB("shell").getCollectionNames().length === 0, "dropped");
print("mongosh OK");
