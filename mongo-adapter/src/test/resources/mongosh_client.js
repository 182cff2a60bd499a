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
t.drop();
print("mongosh OK");
