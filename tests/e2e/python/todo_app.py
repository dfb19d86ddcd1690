"""A small FastAPI app: a live API whose OpenAPI 3.1 document (FastAPI's own,
at /openapi.json) toolscript loads by URL in test_sdk_fastapi.py.

    python todo_app.py PORT
"""

import sys
from enum import Enum
from typing import Optional

import uvicorn
from fastapi import FastAPI, Header, HTTPException, Path, Query
from pydantic import BaseModel

app = FastAPI(title="Todo", version="0.1.0")


class Priority(str, Enum):
    low = "low"
    high = "high"


class NewTodo(BaseModel):
    title: str
    priority: Priority = Priority.low
    note: Optional[str] = None


class Todo(NewTodo):
    id: int
    done: bool = False


todos: dict[int, Todo] = {}


@app.get("/todos", response_model=list[Todo])
def list_todos(limit: int = Query(10, le=100), done: Optional[bool] = None, x_trace: Optional[str] = Header(None)):
    items = [t for t in todos.values() if done is None or t.done == done]
    return items[:limit]


@app.post("/todos", response_model=Todo, status_code=201)
def create_todo(todo: NewTodo):
    t = Todo(id=len(todos) + 1, **todo.model_dump())
    todos[t.id] = t
    return t


@app.get("/todos/{todo_id}", response_model=Todo)
def get_todo(todo_id: int = Path(..., ge=1)):
    if todo_id not in todos:
        raise HTTPException(status_code=404, detail=f"no todo {todo_id}")
    return todos[todo_id]


@app.delete("/todos/{todo_id}", status_code=204)
def delete_todo(todo_id: int):
    todos.pop(todo_id, None)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
