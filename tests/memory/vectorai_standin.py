"""An in-process stand-in for Actian VectorAI DB, so the server store is tested through the
real client over a real loopback gRPC channel without a container.

It subclasses the servicer base classes shipped with the client and overrides only the
methods the store calls; every other method keeps the base class's UNIMPLEMENTED answer, so
a call the stand-in does not know fails loudly. Points live in memory, ranked by numpy
cosine, and the filters the client sends (must / should / must_not over keyword, keyword
list and range conditions) are honoured; any other condition is refused as UNIMPLEMENTED.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import grpc
import numpy as np
from actian_vectorai.models.points import _payload_to_proto, _proto_payload_to_dict
from actian_vectorai.proto import actian_vectorai_collections_pb2 as col_pb
from actian_vectorai.proto import actian_vectorai_collections_service_pb2_grpc as col_grpc
from actian_vectorai.proto import actian_vectorai_common_pb2 as common_pb
from actian_vectorai.proto import actian_vectorai_pb2 as vai_pb
from actian_vectorai.proto import actian_vectorai_pb2_grpc as vai_grpc
from actian_vectorai.proto import actian_vectorai_points_pb2 as pts_pb
from actian_vectorai.proto import actian_vectorai_points_service_pb2_grpc as pts_grpc

COMPLETED = 2  # UpdateStatus.Completed


class Unsupported(Exception):
    """The request uses something the stand-in does not implement."""


@dataclass
class Collection:
    size: int
    distance: int
    points: dict[str, tuple[np.ndarray, dict[str, Any]]] = field(default_factory=dict)


@dataclass
class StandInState:
    collections: dict[str, Collection] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    created: list[str] = field(default_factory=list)
    fail_next: int = 0
    fail_code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE

    async def enter(self, method: str, context: grpc.aio.ServicerContext) -> None:
        """Count the call; fail it while `fail_next` is positive."""
        self.calls[method] += 1
        if self.fail_next > 0:
            self.fail_next -= 1
            await context.abort(self.fail_code, "stand-in: injected transient failure")

    async def collection(self, name: str, context: grpc.aio.ServicerContext) -> Collection:
        if name not in self.collections:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"collection {name} not found")
        return self.collections[name]


def _point_id(pid: common_pb.PointId) -> str:
    return pid.uuid if pid.WhichOneof("point_id_options") == "uuid" else str(pid.num)


def _proto_id(point_id: str) -> common_pb.PointId:
    return (
        common_pb.PointId(num=int(point_id))
        if point_id.isdigit()
        else common_pb.PointId(uuid=point_id)
    )


def _vector(vectors: pts_pb.Vectors) -> np.ndarray:
    if vectors.WhichOneof("vectors_options") != "vector":
        raise Unsupported("named vectors")
    vector = vectors.vector
    data = vector.dense.data if vector.WhichOneof("vector") == "dense" else vector.data
    return np.asarray(data, dtype=np.float32)


def _field_matches(condition: common_pb.FieldCondition, payload: dict[str, Any]) -> bool:
    value = payload.get(condition.key)
    if condition.HasField("match"):
        match = condition.match
        kind = match.WhichOneof("match_value")
        if kind == "keyword":
            return value == match.keyword
        if kind == "keywords":
            return value in match.keywords.strings
        if kind == "boolean":
            return value is match.boolean
        raise Unsupported(f"match {kind}")
    if condition.HasField("range"):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return False
        return _in_range(float(value), condition.range)
    raise Unsupported(f"field condition on {condition.key}")


def _in_range(value: float, bounds: common_pb.Range) -> bool:
    return (
        (not bounds.HasField("gt") or value > bounds.gt)
        and (not bounds.HasField("gte") or value >= bounds.gte)
        and (not bounds.HasField("lt") or value < bounds.lt)
        and (not bounds.HasField("lte") or value <= bounds.lte)
    )


def _condition_matches(condition: common_pb.Condition, payload: dict[str, Any]) -> bool:
    kind = condition.WhichOneof("condition_one_of")
    if kind == "field":
        return _field_matches(condition.field, payload)
    if kind == "filter":
        return matches(condition.filter, payload)
    raise Unsupported(f"condition {kind}")


def matches(condition: common_pb.Filter, payload: dict[str, Any]) -> bool:
    if condition.HasField("min_should"):
        raise Unsupported("min_should")
    return (
        all(_condition_matches(c, payload) for c in condition.must)
        and not any(_condition_matches(c, payload) for c in condition.must_not)
        and (not condition.should or any(_condition_matches(c, payload) for c in condition.should))
    )


def _selected(
    collection: Collection, filter_: common_pb.Filter | None
) -> list[tuple[str, np.ndarray, dict[str, Any]]]:
    return [
        (point_id, vector, payload)
        for point_id, (vector, payload) in sorted(collection.points.items())
        if filter_ is None or matches(filter_, payload)
    ]


def _with_payload(selector: pts_pb.WithPayloadSelector, payload: dict[str, Any]) -> dict:
    if selector.WhichOneof("selector_options") not in (None, "enable"):
        raise Unsupported("payload include/exclude")
    return _payload_to_proto(payload) if selector.enable else {}


def _vectors_output(vector: np.ndarray) -> pts_pb.VectorsOutput:
    return pts_pb.VectorsOutput(
        vector=pts_pb.VectorOutput(dense=pts_pb.DenseVector(data=vector.tolist()))
    )


def _retrieved(point_id: str, vector: np.ndarray, payload: dict, request: Any) -> Any:
    point = pts_pb.RetrievedPoint(
        id=_proto_id(point_id), payload=_with_payload(request.with_payload, payload)
    )
    if request.HasField("with_vectors") and request.with_vectors.enable:
        point.vectors.CopyFrom(_vectors_output(vector))
    return point


def _cosine(query: np.ndarray, vector: np.ndarray) -> float:
    denominator = float(np.linalg.norm(query) * np.linalg.norm(vector))
    return float(np.dot(query, vector)) / denominator if denominator else 0.0


class Health(vai_grpc.ActianVectorAIServicer):
    def __init__(self, state: StandInState) -> None:
        self.state = state

    async def HealthCheck(self, request, context):
        await self.state.enter("HealthCheck", context)
        return vai_pb.HealthCheckReply(title="vectorai stand-in", version="0")


class Collections(col_grpc.CollectionsServicer):
    def __init__(self, state: StandInState) -> None:
        self.state = state

    async def CollectionExists(self, request, context):
        await self.state.enter("CollectionExists", context)
        exists = request.collection_name in self.state.collections
        return col_pb.CollectionExistsResponse(result=col_pb.CollectionExists(exists=exists))

    async def Create(self, request, context):
        await self.state.enter("Create", context)
        name = request.collection_name
        if name in self.state.collections:
            await context.abort(grpc.StatusCode.ALREADY_EXISTS, f"collection {name} exists")
        if request.vectors_config.WhichOneof("config") != "params":
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "stand-in: named vectors")
        params = request.vectors_config.params
        self.state.collections[name] = Collection(size=params.size, distance=params.distance)
        self.state.created.append(name)
        return col_pb.CollectionOperationResponse(result=True)

    async def Get(self, request, context):
        await self.state.enter("GetCollection", context)
        collection = await self.state.collection(request.collection_name, context)
        params = col_pb.VectorParams(size=collection.size, distance=collection.distance)
        info = col_pb.CollectionInfo(
            points_count=len(collection.points),
            config=col_pb.CollectionConfig(
                params=col_pb.CollectionParams(
                    shard_number=1, vectors_config=col_pb.VectorsConfig(params=params)
                )
            ),
        )
        return col_pb.GetCollectionInfoResponse(result=info)


class Points(pts_grpc.PointsServicer):
    def __init__(self, state: StandInState) -> None:
        self.state = state

    async def _refuse(self, context: grpc.aio.ServicerContext, exc: Unsupported) -> None:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"stand-in: {exc}")

    async def Upsert(self, request, context):
        await self.state.enter("Upsert", context)
        collection = await self.state.collection(request.collection_name, context)
        try:
            points = [
                (_point_id(p.id), _vector(p.vectors), _proto_payload_to_dict(p.payload))
                for p in request.points
            ]
        except Unsupported as exc:
            await self._refuse(context, exc)
        for _, vector, _ in points:
            if vector.shape[0] != collection.size:
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"vector dimension mismatch: expected {collection.size}, got {vector.shape[0]}",
                )
        for point_id, vector, payload in points:
            collection.points[point_id] = (vector, payload)
        return pts_pb.PointsOperationResponse(result=pts_pb.UpdateResult(status=COMPLETED))

    async def Delete(self, request, context):
        await self.state.enter("Delete", context)
        collection = await self.state.collection(request.collection_name, context)
        selector = request.points
        try:
            if selector.WhichOneof("points_selector_one_of") == "points":
                doomed = [_point_id(pid) for pid in selector.points.ids]
            else:
                doomed = [p[0] for p in _selected(collection, selector.filter)]
        except Unsupported as exc:
            await self._refuse(context, exc)
        for point_id in doomed:
            collection.points.pop(point_id, None)
        return pts_pb.PointsOperationResponse(result=pts_pb.UpdateResult(status=COMPLETED))

    async def Get(self, request, context):
        await self.state.enter("Get", context)
        collection = await self.state.collection(request.collection_name, context)
        found = []
        for pid in request.ids:
            point_id = _point_id(pid)
            if point_id in collection.points:
                found.append(_retrieved(point_id, *collection.points[point_id], request))
        return pts_pb.GetResponse(result=found)

    async def SetPayload(self, request, context):
        await self.state.enter("SetPayload", context)
        collection = await self.state.collection(request.collection_name, context)
        if request.HasField("key") or not request.HasField("points_selector"):
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "stand-in: payload key/all")
        update = _proto_payload_to_dict(request.payload)
        try:
            selector = request.points_selector
            if selector.WhichOneof("points_selector_one_of") == "points":
                chosen = [_point_id(pid) for pid in selector.points.ids]
            else:
                chosen = [p[0] for p in _selected(collection, selector.filter)]
        except Unsupported as exc:
            await self._refuse(context, exc)
        for point_id in chosen:
            if point_id in collection.points:
                collection.points[point_id][1].update(update)
        return pts_pb.PointsOperationResponse(result=pts_pb.UpdateResult(status=COMPLETED))

    async def Search(self, request, context):
        await self.state.enter("Search", context)
        collection = await self.state.collection(request.collection_name, context)
        if request.HasField("vector_name") or request.HasField("offset"):
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "stand-in: named vector/offset")
        query = np.asarray(request.vector, dtype=np.float32)
        try:
            candidates = _selected(
                collection, request.filter if request.HasField("filter") else None
            )
        except Unsupported as exc:
            await self._refuse(context, exc)
        scored = sorted(
            (
                (_cosine(query, vector), point_id, payload)
                for point_id, vector, payload in candidates
            ),
            key=lambda item: (-item[0], item[1]),
        )
        if request.HasField("score_threshold"):
            scored = [item for item in scored if item[0] >= request.score_threshold]
        result = [
            pts_pb.ScoredPoint(
                id=_proto_id(point_id),
                score=score,
                payload=_with_payload(request.with_payload, payload),
            )
            for score, point_id, payload in scored[: request.limit]
        ]
        return pts_pb.SearchResponse(result=result)

    async def Scroll(self, request, context):
        await self.state.enter("Scroll", context)
        collection = await self.state.collection(request.collection_name, context)
        try:
            selected = _selected(collection, request.filter if request.HasField("filter") else None)
        except Unsupported as exc:
            await self._refuse(context, exc)
        if request.HasField("offset"):
            start = _point_id(request.offset)
            selected = [point for point in selected if point[0] >= start]
        limit = request.limit if request.HasField("limit") else 10
        response = pts_pb.ScrollResponse(
            result=[_retrieved(*point, request) for point in selected[:limit]]
        )
        if len(selected) > limit:
            response.next_page_offset.CopyFrom(_proto_id(selected[limit][0]))
        return response

    async def Count(self, request, context):
        await self.state.enter("Count", context)
        collection = await self.state.collection(request.collection_name, context)
        try:
            count = len(
                _selected(collection, request.filter if request.HasField("filter") else None)
            )
        except Unsupported as exc:
            await self._refuse(context, exc)
        return pts_pb.CountResponse(result=pts_pb.CountResult(count=count))


class VectorAIStandIn:
    """A loopback gRPC server speaking the subset of VectorAI DB the store uses."""

    def __init__(self) -> None:
        self.state = StandInState()
        self.address = ""
        self._server: grpc.aio.Server | None = None

    @property
    def url(self) -> str:
        return f"vectorai://{self.address}"

    async def start(self) -> VectorAIStandIn:
        server = grpc.aio.server()
        vai_grpc.add_ActianVectorAIServicer_to_server(Health(self.state), server)
        col_grpc.add_CollectionsServicer_to_server(Collections(self.state), server)
        pts_grpc.add_PointsServicer_to_server(Points(self.state), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        self._server = server
        self.address = f"127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=None)
            self._server = None
