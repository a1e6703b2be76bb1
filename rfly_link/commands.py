"""Builders for the RflySim3D console commands of RflySim3D's UE4CtrlAPI.

Each returns the command string; send it with :func:`rfly_link.messages.console_command`
(or :meth:`rfly_link.io.clients.RflySim3DClient.send_command`). Arguments are checked so that a
space or an empty name cannot silently shift the console's argument list.
"""

from __future__ import annotations

from enum import IntEnum


class ObjectKind(IntEnum):
    """``RflyReqObjData`` opFlag: what the reply on port 20006 describes."""

    CAMERA = 0  # name is the camera SeqID -> CameraData
    VEHICLE = 1  # name is the CopterID -> CoptReqData
    OBJECT = 2  # name is the scene object's name -> ObjReqData


def _token(name: str, what: str) -> str:
    if not name or any(c.isspace() for c in name):
        raise ValueError(f"{what}: expected a non-empty name without spaces, got {name!r}")
    return name


def _num(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def request_object_data(kind: ObjectKind, name: str | int, color_flag: int = 0) -> str:
    """``RflyReqObjData opFlag objName colorflag`` (reqCamCoptObj / reqCam / reqCopt / reqObj)."""
    return f"RflyReqObjData {int(kind)} {_token(str(name), 'name')} {int(color_flag)}"


def set_stencil_by_actor_name(actor: str, stencil: int, *, is_name_regex: bool = False) -> str:
    return f"RflySetStencilValueByActorName {_token(actor, 'actor')} {int(stencil)} {is_name_regex}"


def set_stencil_by_mesh_name(mesh: str, stencil: int, *, is_name_regex: bool = False) -> str:
    name = _token(mesh, "mesh")
    return f"RflySetStencilValueByMeshComponentName {name} {int(stencil)} {is_name_regex}"


def set_stencil_by_copter_id(copter_id: int, stencil: int) -> str:
    return f"RflySetStencilValueByCopterID {int(copter_id)} {int(stencil)}"


def show_text(text: str, time_s: float | None = None) -> str:
    """``RflyShowText txt`` (5 s) or ``RflyShowTextTime txt time``."""
    token = _token(text, "text")
    return f"RflyShowText {token}" if time_s is None else f"RflyShowTextTime {token} {_num(time_s)}"


def change_map_by_id(map_id: int) -> str:
    return f"RflyChangeMapbyID {int(map_id)}"


def change_map_by_name(name: str) -> str:
    return f"RflyChangeMapbyName {_token(name, 'map name')}"


def change_view_key(key: str, num: int) -> str:
    return f"RflyChangeViewKeyCmd {_token(key, 'key')} {int(num)}"


def camera_pos_ang(x_m: float, y_m: float, z_m: float, roll_deg: float, pitch_deg: float,
                   yaw_deg: float, *, relative: bool = False) -> str:  # fmt: skip
    """``RflyCameraPosAng`` (from the UE origin) or ``RflyCameraPosAngAdd`` (relative)."""
    name = "RflyCameraPosAngAdd" if relative else "RflyCameraPosAng"
    values = " ".join(_num(v) for v in (x_m, y_m, z_m, roll_deg, pitch_deg, yaw_deg))
    return f"{name} {values}"


def camera_fov(degrees: float) -> str:
    return f"RflyCameraFovDegrees {_num(degrees)}"


def change_3d_model(copter_id: int, vehicle_type: int) -> str:
    return f"RflyChange3DModel {int(copter_id)} {int(vehicle_type)}"


def change_vehicle_size(copter_id: int, size: float) -> str:
    return f"RflyChangeVehicleSize {int(copter_id)} {_num(size)}"


def vehicle_pos_ang(copter_id: int, x_m: float, y_m: float, z_m: float, roll_deg: float,
                    pitch_deg: float, yaw_deg: float, *, fit_ground: bool = False,
                    relative: bool = False) -> str:  # fmt: skip
    """``RflySetVehiclePosAng`` (absolute) or ``RflyMoveVehiclePosAng`` (relative)."""
    name = "RflyMoveVehiclePosAng" if relative else "RflySetVehiclePosAng"
    values = " ".join(_num(v) for v in (x_m, y_m, z_m, roll_deg, pitch_deg, yaw_deg))
    return f"{name} {int(copter_id)} {int(fit_ground)} {values}"


def scan_terrain(x_left_bottom_m: float, y_left_bottom_m: float, x_right_top_m: float,
                 y_right_top_m: float, scan_height_m: float, interval_m: float) -> str:  # fmt: skip
    values = (x_left_bottom_m, y_left_bottom_m, x_right_top_m, y_right_top_m, scan_height_m)
    return "RflyScanTerrainH " + " ".join(_num(v) for v in (*values, interval_m))


def cesium_origin(lat_deg: float, lon_deg: float, alt_m: float) -> str:
    return f"RflyCesiumOriPos {_num(lat_deg)} {_num(lon_deg)} {_num(alt_m)}"


def clear_capture() -> str:
    return "RflyClearCapture"
