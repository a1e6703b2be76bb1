"""Every checksum marker RflySim puts in a structure's first field, by name.

The same number marks different structures on different ports (1234567890 marks eleven), so a
marker alone identifies nothing: :mod:`rfly_link.dispatch` decides by length, marker and port.
Values from the specs (see :mod:`rfly_link.wire`) or, where they are silent, the public SDK.
"""

from __future__ import annotations

# Vision-sensor fragments and requests (VSP 1.2, CFG 5, VSP 4.1).
FRAGMENT_24 = 1234567890
FRAGMENT_32 = 1234567893
SENSOR_REQUEST = 12345  # VisionSensorReq*, SensorReqCopterSim, gimbal control (uint16)
GIMBAL_STATUS = 12346

# CopterSim state, control and replies (VSP 3, BRIDGE 2.2, DEC).
STATE_168 = 123456789  # SOut2Simulator; also sendUE4PosFull
STATE_112 = 1234567891  # SOut2SimulatorSimpleTime; also sendUE4PosNew
SIL_INT_FLOAT = 1234567897
IMU_REPLY = 1234567898
ODOM_REPLY = 1234567888
UE4_CMD_GPS = 1234567890  # RflySim3D's map GPS origin on 30100 + 2N - 1 (SDK)

# CopterSim discovery and time (SDK ReqCopterSim, VisionCaptureApi).
TIME_STAMP = 123456789  # RflyTimeStmp heartbeat on 20005
RE_COPTERSIM = 1234567
CPTSIM_CMD = 1234567895
HEARTBEAT_REQUEST = 123450
START_SIGNAL = 1234567890

# PX4 side of CopterSim (SDK PX4MavCtrlV4, DllSimCtrlAPI.ModelLoad).
PX4_EXT = 1234567898  # 48 B on 40100 + 2N - 1: not the IMU reply (DEC)
UORB_RFLY_CTRL = 1234567896
OFFBOARD_SHORT = 1234567890
REBOOT = 987654321
HIL_STATE_SHORT = 1234567890
HIL_EKF_3D_FIXED = 1234567891
HIL_CRASH = 1234567892

# DLL model inputs and outputs (SDK DllSimCtrlAPI).
DLL_IN_DOUB_CTRLS = 1234567897
IN_CTRL_EXT_BASE = 1234567800  # + port index 1..5
IN_CTRL_EXT_NO_UPDATE = 100  # added when the DLL should wait for the next index
IN_CTRL_EXT = tuple(IN_CTRL_EXT_BASE + i for i in range(1, 6))
IN_CTRL_EXT_DOUBLE = IN_CTRL_EXT + tuple(c + IN_CTRL_EXT_NO_UPDATE for c in IN_CTRL_EXT)
MODEL_IN_PARAMS = 1234567891
INIT_IN_PARAMS = 1234567892
DYN_MODI_PARAMS = 1234567893
UE_TO_COPTERSIM = 1234567899
RAY_TRACE_DRONE = 1234567890
COLLISION_20D = 1234567880
TERRAIN_15D = 1234567881
OUT_COPTER = 1234567890
CUSTOM_DATA = 123456  # the SDK's default; callers may pick any

# RflySim3D receive side (UE4 UE4MsgRecLoop, DEC).
CRASH = 1234567890
REQ_VE_CRASH_DATA = 1234567897
OBJECT_DATA = 1234567891  # CameraData, CoptReqData, ObjReqData

# RflySim3D send side (UE4).
UE4_NORMAL = 1234567890
UE4_FIT_GROUND = 1234567891
UE4_LABEL = 1234567899
UE4_ATTACH = 1234567892
UE4_EXT_ACT = 1234567894
UE4_COMMAND = 1234567890
UE4_COMMAND_NET = 1234567897
